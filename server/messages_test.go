package server

import (
	"strings"
	"testing"
)

// Refusals name the API's fields and say only what holds for the route.
func TestMessagesNameAPIFields(t *testing.T) {
	t.Parallel()
	h := newWatchHarness(t)
	id, tok := h.enqueueLease("crawl")
	cases := []struct {
		name, method, path, body string
		want                     string
		not                      []string
	}{
		{"progress with neither field", "POST", "/v1/worker/jobs/" + id + "/progress", `{"token":"` + tok + `"}`,
			"percent or data must be set", []string{"Data", "Percent"}},
		{"progress with data null", "POST", "/v1/worker/jobs/" + id + "/progress", `{"token":"` + tok + `","data":null}`,
			"percent or data must be set", []string{"Data"}},
		{"events with a bad queue", "GET", "/v1/events?queue=%20", "", "queue ", []string{"event types", "job.completed"}},
		{"events with a bad type", "GET", "/v1/events?type=job.bogus", "", "type ", nil},
		{"tenant back-off overflow", "POST", "/v1/tenants/acme/backoff", `{"duration_ms":99999999999999999999}`,
			"duration_ms must be between 0 and", []string{"pauses until resumed"}},
		{"tenant back-off too long", "POST", "/v1/tenants/acme/backoff", `{"duration_ms":4000000000000}`,
			"duration_ms must be between 0 and", []string{"pauses until resumed"}},
		{"queue pause too long", "POST", "/v1/queues/crawl/pause", `{"duration_ms":4000000000000}`,
			"duration_ms must be between 0 and 3153600000000 (100 years; 0 or absent pauses until resumed)", nil},
	}
	for _, c := range cases {
		r := h.do(c.method, c.path, "", c.body)
		detail, _ := r.body["detail"].(string)
		if r.status != 400 || !strings.HasPrefix(detail, c.want) {
			t.Errorf("%s: %d %q, want 400 %q...", c.name, r.status, detail, c.want)
		}
		for _, n := range c.not {
			if strings.Contains(detail, n) {
				t.Errorf("%s: %q says %q", c.name, detail, n)
			}
		}
	}
	if r := h.do("GET", "/v1/events?type=job.bogus", "", ""); !strings.Contains(r.raw, "event types: ") {
		t.Errorf("a bad type lists the types: %s", r.raw)
	}
}
