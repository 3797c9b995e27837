package server

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
	"github.com/sluicehq/sluice/server/config"
)

// failJob enqueues a job in queue q with one attempt, leases it and fails
// it, and returns its id.
func (h *harness) failJob(q string) string {
	h.t.Helper()
	h.do("POST", "/v1/jobs", "", `{"queue":"`+q+`","kind":"k","max_attempts":1}`)
	l := h.do("POST", "/v1/worker/lease", "", `{"queues":["`+q+`"],"worker_id":"w"}`)
	lease := l.body["leases"].([]any)[0].(map[string]any)
	id := lease["job"].(map[string]any)["id"].(string)
	r := h.do("POST", "/v1/worker/jobs/"+id+"/fail", "", `{"token":"`+lease["token"].(string)+`","error":"boom"}`)
	if r.status != 200 || r.body["state"] != "failed" {
		h.t.Fatalf("fail: %d %s", r.status, r.raw)
	}
	return id
}

func TestRetryThroughTheAPI(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, true)
	id := h.failJob("q")
	r := h.do("POST", "/v1/jobs/"+id+"/retry", "", "")
	if r.status != 200 || r.body["state"] != "pending" || r.body["attempt"] != 0.0 || r.body["last_error"] != "boom" || r.body["id"] != id {
		t.Fatalf("retry: %d %s", r.status, r.raw)
	}
	cases := []struct {
		name, id string
		status   int
		detail   string
	}{
		{"not failed", id, 409, "job " + id + " is pending; only failed or cancelled jobs can be retried"},
		{"unknown", "12345", 404, `unknown job "12345"`},
	}
	for _, c := range cases {
		r := h.do("POST", "/v1/jobs/"+c.id+"/retry", "", "")
		if r.status != c.status || r.body["detail"] != c.detail || !strings.HasPrefix(r.header.Get("Content-Type"), "application/problem+json") {
			t.Errorf("%s: %d %s; want %d %q", c.name, r.status, r.raw, c.status, c.detail)
		}
	}
	// It runs again.
	l := h.do("POST", "/v1/worker/lease", "", `{"queues":["q"],"worker_id":"w"}`)
	if got := l.body["leases"].([]any); len(got) != 1 || got[0].(map[string]any)["job"].(map[string]any)["id"] != id {
		t.Fatalf("lease after retry: %s", l.raw)
	}
}

func TestAdminRoutesNeedAdmin(t *testing.T) {
	t.Parallel()
	h := newHarness(t, authConfig, true)
	const worker = "worker-0123456789abcdef"
	for _, path := range []string{"/v1/jobs/1/retry", "/v1/queues/q/pause", "/v1/queues/q/resume"} {
		if r := h.do("POST", path, worker, ""); r.status != 403 || r.body["detail"] != `token "worker" lacks the admin role` {
			t.Errorf("POST %s as worker: %d %s", path, r.status, r.raw)
		}
	}
	if r := h.do("GET", "/v1/webhooks/ops/deliveries", worker, ""); r.status != 403 {
		t.Errorf("webhook deliveries as worker: %d %s", r.status, r.raw)
	}
	if r := h.do("POST", "/v1/queues/q/pause", "admin-0123456789abcdef", ""); r.status != 200 {
		t.Errorf("pause as admin: %d %s", r.status, r.raw)
	}
}

func TestPauseThroughTheAPI(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, true)
	h.do("POST", "/v1/jobs", "", `{"queue":"q","kind":"k"}`)
	lease := func() int {
		t.Helper()
		l := h.do("POST", "/v1/worker/lease", "", `{"queues":["q"],"worker_id":"w"}`)
		return len(l.body["leases"].([]any))
	}
	statsPaused := func() any {
		t.Helper()
		return h.do("GET", "/v1/queues/stats", "", "").body["queues"].([]any)[0].(map[string]any)["paused_until"]
	}
	r := h.do("POST", "/v1/queues/q/pause", "", "")
	until, _ := time.Parse(time.RFC3339Nano, r.body["paused_until"].(string))
	if r.status != 200 || r.body["paused"] != true || time.Until(until) < 99*365*24*time.Hour {
		t.Fatalf("pause until resumed: %d %s", r.status, r.raw)
	}
	if n := lease(); n != 0 {
		t.Fatalf("leased %d jobs from a paused queue", n)
	}
	if statsPaused() != r.body["paused_until"] {
		t.Errorf("stats paused_until = %v, want %v", statsPaused(), r.body["paused_until"])
	}
	if r := h.do("POST", "/v1/queues/q/resume", "", ""); r.status != 200 || r.body["paused"] != false || r.body["paused_until"] != nil {
		t.Fatalf("resume: %d %s", r.status, r.raw)
	}
	if statsPaused() != nil {
		t.Errorf("stats after resume: paused_until = %v", statsPaused())
	}
	// A pause for a while ends by itself; it is not shortened by a later,
	// shorter one.
	r = h.do("POST", "/v1/queues/q/pause", "", `{"duration_ms":60000}`)
	until, _ = time.Parse(time.RFC3339Nano, r.body["paused_until"].(string))
	if r.status != 200 || time.Until(until) > time.Minute || time.Until(until) < 50*time.Second {
		t.Fatalf("pause for a minute: %d %s", r.status, r.raw)
	}
	h.do("POST", "/v1/queues/q/resume", "", "")
	if n := lease(); n != 1 {
		t.Fatalf("leased %d jobs after resume, want 1", n)
	}
	bad := []struct{ path, body, detail string }{
		{"/v1/queues/q/pause", `{"duration_ms":-1}`, "duration_ms must be between 0 and 3153600000000 (100 years; 0 or absent pauses until resumed), got -1"},
		{"/v1/queues/q/pause", `{"for":"1m"}`, `unknown field "for" (fields: duration_ms)`},
	}
	for _, b := range bad {
		if r := h.do("POST", b.path, "", b.body); r.status != 400 || r.body["detail"] != b.detail {
			t.Errorf("POST %s %s: %d %s; want 400 %q", b.path, b.body, r.status, r.raw, b.detail)
		}
	}
}

func TestDeliveriesThroughTheAPI(t *testing.T) {
	t.Parallel()
	b := openQueue(t, sqlitequeue.Options{Outbox: true})
	h := newHarnessOn(t, testConfig, b)
	ob := backend.Outbox(b)
	ctx := context.Background()
	for i, d := range []backend.Delivery{
		{EventID: "evt_1", EventType: queue.EventJobFailed, JobID: "7", Subscription: "ops", URL: "https://user:pw@hooks.example/in?key=secret",
			Attempt: 1, Status: 500, Latency: 1500 * time.Microsecond, Error: "HTTP 500", Outcome: backend.DeliveryRetry},
		{EventID: "evt_1", EventType: queue.EventJobFailed, JobID: "7", Subscription: "ops", URL: "https://hooks.example/in",
			Attempt: 2, Status: 200, Latency: 2 * time.Millisecond, Outcome: backend.DeliveryOK},
		{EventID: "evt_2", EventType: queue.EventJobCompleted, JobID: "8", Subscription: "audit", URL: "https://audit.example/",
			Attempt: 1, Status: 204, Outcome: backend.DeliveryOK},
	} {
		if err := ob.RecordDelivery(ctx, d); err != nil {
			t.Fatalf("RecordDelivery %d: %v", i, err)
		}
	}
	r := h.do("GET", "/v1/jobs/7/deliveries", "", "")
	list := r.body["deliveries"].([]any)
	if r.status != 200 || len(list) != 2 {
		t.Fatalf("job 7: %d %s", r.status, r.raw)
	}
	newest, oldest := list[0].(map[string]any), list[1].(map[string]any)
	checks := []struct {
		name      string
		got, want any
	}{
		{"newest attempt", newest["attempt"], 2.0},
		{"newest outcome", newest["outcome"], "delivered"},
		{"oldest url redacted", oldest["url"], "https://hooks.example/in"},
		{"oldest latency_ms", oldest["latency_ms"], 1.5},
		{"oldest error", oldest["error"], "HTTP 500"},
		{"oldest status", oldest["status"], 500.0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if r := h.do("GET", "/v1/jobs/9/deliveries", "", ""); r.status != 200 || !strings.Contains(r.raw, `"deliveries":[]`) {
		t.Errorf("job without deliveries: %d %s", r.status, r.raw)
	}
	page := h.do("GET", "/v1/webhooks/ops/deliveries?limit=1", "", "")
	if page.status != 200 || len(page.body["deliveries"].([]any)) != 1 || page.body["next"] == nil {
		t.Fatalf("first page: %d %s", page.status, page.raw)
	}
	next := h.do("GET", "/v1/webhooks/ops/deliveries?limit=1&cursor="+page.body["next"].(string), "", "")
	if got := next.body["deliveries"].([]any); len(got) != 1 || got[0].(map[string]any)["attempt"] != 1.0 || next.body["next"] != nil {
		t.Errorf("second page: %d %s", next.status, next.raw)
	}
	for _, q := range []string{"limit=0", "limit=x", "cursor=nope"} {
		if r := h.do("GET", "/v1/webhooks/ops/deliveries?"+q, "", ""); r.status != 400 {
			t.Errorf("?%s: %d %s, want 400", q, r.status, r.raw)
		}
	}
}

// plainBackend serves none of the optional parts of the backend it wraps,
// though it still has their methods.
type plainBackend struct{ *sqlitequeue.Backend }

func (plainBackend) Features() backend.Features {
	return backend.Features{Name: "plain", Capabilities: queue.AllCapabilities}
}

// A backend without retry, pauses or a delivery log answers 501 with a
// problem that names what is missing. A SQLite store opened with its
// outbox off (webhooks not configured) keeps no delivery log either.
func TestAdminRoutesUnsupported(t *testing.T) {
	t.Parallel()
	plain := newHarnessOn(t, testConfig, plainBackend{openQueue(t, sqlitequeue.Options{})})
	off := newHarnessOn(t, testConfig, openQueue(t, sqlitequeue.Options{}))
	cases := []struct {
		h                    *harness
		method, path, detail string
	}{
		{plain, "POST", "/v1/jobs/1/retry", "plain does not support retrying finished jobs"},
		{plain, "POST", "/v1/queues/q/pause", "plain does not support tenant scheduling"},
		{plain, "POST", "/v1/queues/q/resume", "plain does not support tenant scheduling"},
		{plain, "GET", "/v1/jobs/1/deliveries", "plain keeps no webhook delivery log"},
		{plain, "GET", "/v1/webhooks/ops/deliveries", "plain keeps no webhook delivery log"},
		{plain, "GET", "/v1/tenants", "plain does not support listing tenants"},
		{off, "GET", "/v1/jobs/1/deliveries", "sqlitequeue keeps no webhook delivery log"},
	}
	for _, c := range cases {
		r := c.h.do(c.method, c.path, "", "")
		if r.status != 501 || r.body["detail"] != c.detail {
			t.Errorf("%s %s: %d %s; want 501 %q", c.method, c.path, r.status, r.raw, c.detail)
		}
	}
}

func openQueue(t *testing.T, opts sqlitequeue.Options) *sqlitequeue.Backend {
	t.Helper()
	b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// newHarnessOn is newHarness on a job backend of the test's own.
func newHarnessOn(t *testing.T, doc string, b backend.Backend) *harness {
	t.Helper()
	cfg, err := config.Parse([]byte(doc), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	store := memlimit.New(memlimit.Options{Clock: clock.Real, SweepInterval: -1})
	t.Cleanup(func() { store.Close() })
	srv, err := New(Options{Config: cfg, Limits: store, Queue: b, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &harness{t: t, srv: srv, http: hs}
}

func TestWhoami(t *testing.T) {
	t.Parallel()
	h := newHarness(t, authConfig, true)
	cases := []struct {
		name, token string
		status      int
		raw         string
	}{
		{"admin", "admin-0123456789abcdef", 200, `{"name":"ops","roles":["admin"],"open":false}`},
		{"worker", "worker-0123456789abcdef", 200, `{"name":"worker","roles":["worker"],"open":false}`},
		{"no token", "", 401, ""},
		{"bad token", "nope-0123456789abcdef", 401, ""},
	}
	for _, c := range cases {
		r := h.do("GET", "/v1/whoami", c.token, "")
		if r.status != c.status || (c.raw != "" && strings.TrimSpace(r.raw) != c.raw) {
			t.Errorf("%s: %d %s; want %d %s", c.name, r.status, r.raw, c.status, c.raw)
		}
	}
	open := newHarness(t, testConfig, true)
	if r := open.do("GET", "/v1/whoami", "", ""); r.status != 200 || r.body["open"] != true || len(r.body["roles"].([]any)) != len(config.Roles) {
		t.Errorf("open server: %d %s", r.status, r.raw)
	}
}

// noUnique is a store without unique keys, as the RabbitMQ lane is.
type noUnique struct{ *sqlitequeue.Backend }

func (n noUnique) Features() backend.Features {
	f := n.Backend.Features()
	f.Name, f.Capabilities = "lane", f.Capabilities.Without(queue.CapUnique)
	return f
}

// A job field the backend cannot honour is refused with 501 naming the
// field as the request wrote it, and nothing is stored.
func TestUnsupportedFieldInAPIWords(t *testing.T) {
	t.Parallel()
	h := newHarnessOn(t, testConfig, noUnique{openQueue(t, sqlitequeue.Options{})})
	cases := []struct{ path, body, detail string }{
		{"/v1/jobs", `{"queue":"q","kind":"k","unique_key":"u"}`, "lane does not support unique keys (unique_key is set)"},
		{"/v1/jobs/batch", `{"jobs":[{"queue":"q","kind":"k"},{"queue":"q","kind":"k","unique_key":"u"}]}`,
			"lane does not support unique keys (jobs[1].unique_key is set)"},
	}
	for _, c := range cases {
		r := h.do("POST", c.path, "", c.body)
		if r.status != 501 || r.body["detail"] != c.detail {
			t.Errorf("POST %s: %d %s; want 501 %q", c.path, r.status, r.raw, c.detail)
		}
	}
	if r := h.do("GET", "/v1/jobs", "", ""); r.status != 200 || len(r.body["jobs"].([]any)) != 0 {
		t.Errorf("GET /v1/jobs after refusals: %d %s; want no jobs", r.status, r.raw)
	}
}
