package server

import (
	"strings"
	"testing"
	"time"
)

// TestBackOffThroughTheAPI backs off a tenant and a group over HTTP: their
// jobs are not leased until the back-off ends, and duration_ms 0 resumes
// them at once.
func TestBackOffThroughTheAPI(t *testing.T) {
	t.Parallel()
	h := newHarness(t, authConfig, true)
	const worker = "worker-0123456789abcdef"
	if r := h.do("POST", "/v1/groups", "admin-0123456789abcdef", `{"id":"crawl"}`); r.status != 201 {
		t.Fatalf("group: %d %s", r.status, r.raw)
	}
	for _, c := range []struct {
		scope, path, job, field string
	}{
		{"tenant", "/v1/tenants/acme/backoff", `{"queue":"bt","kind":"k","tenant":"acme"}`, "tenant"},
		{"group", "/v1/groups/crawl/backoff", `{"queue":"bg","kind":"k","group":"crawl"}`, "group"},
	} {
		t.Run(c.scope, func(t *testing.T) {
			queueName := strings.Split(c.job, `"`)[3]
			lease := func() int {
				r := h.do("POST", "/v1/worker/lease", worker, `{"queues":["`+queueName+`"],"worker_id":"w","max":5}`)
				if r.status != 200 {
					t.Fatalf("lease: %d %s", r.status, r.raw)
				}
				return len(r.body["leases"].([]any))
			}
			r := h.do("POST", c.path, worker, `{"duration_ms":60000}`)
			if r.status != 200 || r.body["paused"] != true || r.body[c.field] == nil {
				t.Fatalf("back off: %d %s", r.status, r.raw)
			}
			within(t, c.scope+" paused_until", timeField(t, r.body, "paused_until"), 50*time.Second, 70*time.Second)
			if r := h.do("POST", "/v1/jobs", "admin-0123456789abcdef", c.job); r.status != 201 {
				t.Fatalf("enqueue: %d %s", r.status, r.raw)
			}
			if n := lease(); n != 0 {
				t.Errorf("leased %d jobs of a %s backed off", n, c.scope)
			}
			// A shorter back-off keeps the later end in force.
			if r := h.do("POST", c.path, worker, `{"duration_ms":1000}`); r.status != 200 || time.Until(timeField(t, r.body, "paused_until")) < 50*time.Second {
				t.Errorf("shorter back-off: %d %s", r.status, r.raw)
			}
			r = h.do("POST", c.path, worker, `{"duration_ms":0}`)
			if r.status != 200 || r.body["paused"] != false || r.body["paused_until"] != nil {
				t.Fatalf("resume: %d %s", r.status, r.raw)
			}
			if n := lease(); n != 1 {
				t.Errorf("leased %d jobs after the %s resumed, want 1", n, c.scope)
			}
		})
	}
}

// TestBackOffBadInput: every refusal names the field and the rule, and a
// token without the worker role is refused.
func TestBackOffBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t, authConfig, true)
	const worker = "worker-0123456789abcdef"
	for _, c := range []struct {
		name, path, token, body string
		status                  int
		detail                  string
	}{
		{"missing", "/v1/tenants/acme/backoff", worker, `{}`, 400, "duration_ms is required"},
		{"negative", "/v1/tenants/acme/backoff", worker, `{"duration_ms":-1}`, 400, "duration_ms must be"},
		{"too long", "/v1/groups/g/backoff", worker, `{"duration_ms":4000000000000}`, 400, "duration_ms must be"},
		{"not a number", "/v1/groups/g/backoff", worker, `{"duration_ms":"1m"}`, 400, "duration_ms"},
		{"unknown field", "/v1/tenants/acme/backoff", worker, `{"duration":1000}`, 400, "duration"},
		{"blank tenant", "/v1/tenants/%20/backoff", worker, `{"duration_ms":1000}`, 400, "tenant must not be blank"},
		{"no body", "/v1/tenants/acme/backoff", worker, "", 400, ""},
		{"unknown group", "/v1/groups/nope/backoff", worker, `{"duration_ms":1000}`, 404, `unknown group \"nope\"`},
		{"wrong role", "/v1/tenants/acme/backoff", "limiter-0123456789abcdef", `{"duration_ms":1000}`, 403, `lacks the worker role`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := h.do("POST", c.path, c.token, c.body)
			if r.status != c.status || !strings.Contains(r.raw, c.detail) {
				t.Errorf("got %d %s, want %d with %q", r.status, r.raw, c.status, c.detail)
			}
		})
	}
}
