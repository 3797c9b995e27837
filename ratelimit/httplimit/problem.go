package httplimit

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// ProblemTypeQuotaExceeded is the problem type of a 429 over a limit, from
// the IANA HTTP Problem Types registry.
const ProblemTypeQuotaExceeded = "https://iana.org/assignments/http-problem-types#quota-exceeded"

// Problem is an RFC 9457 problem detail, written as
// application/problem+json. Empty fields are left out; an empty Type means
// "about:blank" (the status code says it all).
type Problem struct {
	Type   string `json:"type,omitempty"`
	Title  string `json:"title,omitempty"`
	Status int    `json:"status,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// WriteProblem writes p with status p.Status (500 when unset) as
// application/problem+json. Headers already set on w are kept.
func WriteProblem(w http.ResponseWriter, p Problem) {
	if p.Status == 0 {
		p.Status = http.StatusInternalServerError
	}
	if p.Title == "" {
		p.Title = http.StatusText(p.Status)
	}
	body, err := json.Marshal(p)
	if err != nil { // cannot happen: four plain fields
		body = []byte(`{}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(body, '\n')) // a failed write means the client left
}

// Rejection describes a request the middleware refuses.
type Rejection struct {
	// Status is 429 (over a limit) or 503 (the store is down and the
	// limiter fails closed).
	Status int
	// Policy is the policy the request was counted under.
	Policy string
	// Decision is the store's decision; empty on a store fault.
	Decision ratelimit.Decision
	// Fault is the store fault behind a 503; nil for a 429.
	Fault error
}

// Detail is the human-readable reason: "Too many requests: N every S
// seconds" for the limit that denied, or a store-unavailable message.
func (rj Rejection) Detail() string {
	if res, ok := rj.Decision.Denied(); ok {
		secs := strconv.FormatFloat(res.Limit.Window.Seconds(), 'f', -1, 64)
		return "Too many requests: " + strconv.FormatInt(res.Limit.Quota, 10) + " every " + secs + " seconds"
	}
	if rj.Fault != nil {
		return "Rate limit unavailable, retry later"
	}
	return http.StatusText(rj.Status)
}

// Responder writes a refused request. The RateLimit fields and Retry-After
// are already set on w; the Responder writes the status and the body.
type Responder func(w http.ResponseWriter, r *http.Request, rj Rejection)

// DefaultResponder writes rj as application/problem+json: for a 429 the
// type is ProblemTypeQuotaExceeded and the detail rj.Detail().
func DefaultResponder(w http.ResponseWriter, _ *http.Request, rj Rejection) {
	p := Problem{Status: rj.Status, Detail: rj.Detail()}
	if rj.Status == http.StatusTooManyRequests {
		p.Type = ProblemTypeQuotaExceeded
	}
	WriteProblem(w, p)
}

// FaultRetryAfter is the Retry-After sent with a 503 when a fail-closed
// store is down: no one knows when it will be back, so clients are told to
// wait a short while rather than hammer it.
const FaultRetryAfter = time.Second
