package budget

import "net/http"

// Client returns an HTTP client whose every response is learned from for
// the budget name (see Transport): one line in a job handler, so that an
// upstream's 429 closes the budget for the whole fleet —
//
//	resp, err := b.Client("openai").Post(url, "application/json", body)
//
// It uses http.DefaultTransport; wrap Transport yourself for another one
// or to add retries (flow.Transport outside it).
func (b *Budgets) Client(name string) *http.Client {
	return &http.Client{Transport: Transport(nil, b, TransportOptions{Budget: func(*http.Request) string { return name }})}
}
