package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
	"github.com/sluicehq/sluice/server/config"
)

const maxInt64 = "9223372036854775807"

// badCase is one refused request: the whole answer a caller reads.
type badCase struct {
	name, method, path, body string
	header                   map[string]string
	status                   int
	detail                   string
	prefix                   bool // detail is a prefix (the rest names the time now)
}

func (c badCase) run(t *testing.T, h *harness) {
	t.Helper()
	r := h.send(c.method, c.path, c.body, c.header)
	d, _ := r.body["detail"].(string)
	if r.status != c.status || (c.prefix && !strings.HasPrefix(d, c.detail)) || (!c.prefix && d != c.detail) {
		t.Errorf("%s %s %s\n got %d %q\nwant %d %q", c.method, c.path, c.body, r.status, d, c.status, c.detail)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("%s: Content-Type = %q", c.name, ct)
	}
}

// send is do with headers of the caller's choosing. It works on a
// harness whose http holds only a URL (a server started by Run).
func (h *harness) send(method, path, body string, header map[string]string) reply {
	h.t.Helper()
	req, err := http.NewRequest(method, h.http.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	client := h.http.Client()
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

const msRule = "must be between 0 and 3153600000000 (100 years)"

// Job specs the API refuses, in its own words; none of them stores a job.
func TestBadJobInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, true)
	fields := "(fields: queue, kind, payload, tenant, group, priority, run_at, delay_ms, max_attempts, timeout_ms, unique_key, unique_for_ms, depends_on, on_parent_failure, webhook)"
	cases := []badCase{
		{name: "delay overflow", body: `{"queue":"q","kind":"k","delay_ms":` + maxInt64 + `}`, detail: "delay_ms " + msRule + ", got " + maxInt64},
		{name: "delay past int64", body: `{"queue":"q","kind":"k","delay_ms":1e30}`, detail: "delay_ms " + msRule + ", got 1e30"},
		{name: "delay just over", body: `{"queue":"q","kind":"k","delay_ms":3153600000001}`, detail: "delay_ms " + msRule + ", got 3153600000001"},
		{name: "timeout overflow", body: `{"queue":"q","kind":"k","timeout_ms":` + maxInt64 + `}`, detail: "timeout_ms " + msRule + ", got " + maxInt64},
		{name: "unique for overflow", body: `{"queue":"q","kind":"k","unique_key":"u","unique_for_ms":` + maxInt64 + `}`, detail: "unique_for_ms " + msRule + ", got " + maxInt64},
		{name: "run at year 2300", body: `{"queue":"q","kind":"k","run_at":"2300-01-01T00:00:00Z"}`, detail: "run_at must be at most 100 years ahead (before ", prefix: true},
		{name: "run at words", body: `{"queue":"q","kind":"k","run_at":"tomorrow"}`, detail: `run_at must be RFC 3339 (such as 2030-01-02T15:04:05Z), got "tomorrow"`},
		{name: "run at number", body: `{"queue":"q","kind":"k","run_at":1700000000}`, detail: "run_at must be a string, got a number"},
		{name: "priority fraction", body: `{"queue":"q","kind":"k","priority":1.5}`, detail: "priority must be an integer, got 1.5"},
		{name: "priority string", body: `{"queue":"q","kind":"k","priority":"1"}`, detail: "priority must be an integer, got a string"},
		{name: "priority exponent", body: `{"queue":"q","kind":"k","priority":1e3}`, detail: "priority must be a plain integer (no fraction or exponent), got 1e3"},
		{name: "priority huge", body: `{"queue":"q","kind":"k","priority":1e30}`, detail: "priority must be between 0 and 1048575, got 1e30"},
		{name: "attempts", body: `{"queue":"q","kind":"k","max_attempts":2000000000}`, detail: "max_attempts must be between 0 (the default, 25) and 1000, got 2000000000"},
		{name: "blank queue", body: `{"queue":"  ","kind":"k"}`, detail: `queue must not be blank (only spaces), got "  "`},
		{name: "blank kind", body: `{"queue":"q","kind":" "}`, detail: `kind must not be blank (only spaces), got " "`},
		{name: "blank tenant", body: `{"queue":"q","kind":"k","tenant":"   "}`, detail: `tenant must not be blank (only spaces), got "   "`},
		{name: "unknown field", body: `{"queue":"q","kind":"k","dealy_ms":5}`, detail: `unknown field "dealy_ms" ` + fields},
		{name: "not an object", body: `[1]`, detail: "request body must be an object, got an array"},
		{name: "gzip", body: "\x1f\x8b\x08\x00", header: map[string]string{"Content-Encoding": "gzip"}, status: 415,
			detail: `Content-Encoding "gzip" is not supported: send the body uncompressed`},
		{name: "batch fraction", path: "/v1/jobs/batch", body: `{"jobs":[{"queue":"q","kind":"k"},{"queue":"q","kind":"k","priority":0.5}]}`,
			detail: "jobs[1].priority must be an integer, got 0.5"},
		{name: "batch unknown field", path: "/v1/jobs/batch", body: `{"jobs":[{"queue":"q","kind":"k"},{"queue":"q","kind":"k","delay":5}]}`,
			detail: `unknown field "jobs[1].delay" ` + fields},
		{name: "batch not an object", path: "/v1/jobs/batch", body: `{"jobs":[{"queue":"q","kind":"k"},7]}`, detail: "jobs[1] must be an object, got a number"},
		{name: "batch run at", path: "/v1/jobs/batch", body: `{"jobs":[{"queue":"q","kind":"k"},{"queue":"q","kind":"k","run_at":"2030-01-02"}]}`,
			detail: `jobs[1].run_at must be RFC 3339 (such as 2030-01-02T15:04:05Z), got "2030-01-02"`},
		{name: "batch overflow", path: "/v1/jobs/batch", body: `{"jobs":[{"queue":"q","kind":"k"},{"queue":"q","kind":"k","delay_ms":` + maxInt64 + `}]}`,
			detail: "jobs[1].delay_ms " + msRule + ", got " + maxInt64},
		{name: "batch attempts", path: "/v1/jobs/batch", body: `{"jobs":[{"queue":"q","kind":"k"},{"queue":"q","kind":"k","max_attempts":1001}]}`,
			detail: "jobs[1].max_attempts must be between 0 (the default, 25) and 1000, got 1001"},
	}
	for _, c := range cases {
		c.method = "POST"
		if c.path == "" {
			c.path = "/v1/jobs"
		}
		if c.status == 0 {
			c.status = 400
		}
		t.Run(c.name, func(t *testing.T) { c.run(t, h) })
	}
	if r := h.do("GET", "/v1/jobs", "", ""); r.status != 200 || len(r.body["jobs"].([]any)) != 0 {
		t.Errorf("after the refusals: %d %s, want no job stored", r.status, r.raw)
	}
}

// Worker, admin, tenant and group calls the API refuses; none of them
// changes anything.
func TestBadControlInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, true)
	long := strings.Repeat("a", 300)
	cases := []badCase{
		{name: "lease overflow", method: "POST", path: "/v1/worker/lease", body: `{"queues":["q"],"worker_id":"w","lease_ms":` + maxInt64 + `}`,
			detail: "lease_ms " + msRule + ", got " + maxInt64},
		{name: "lease blank queue", method: "POST", path: "/v1/worker/lease", body: `{"queues":[" "],"worker_id":"w"}`,
			detail: `queues[0] must not be blank (only spaces), got " "`},
		{name: "lease max zero", method: "POST", path: "/v1/worker/lease", body: `{"queues":["q"],"worker_id":"w","max":0}`,
			detail: "max must be between 1 and 100, got 0"},
		{name: "lease max over", method: "POST", path: "/v1/worker/lease", body: `{"queues":["q"],"worker_id":"w","max":101}`,
			detail: "max must be between 1 and 100, got 101"},
		{name: "lease long worker", method: "POST", path: "/v1/worker/lease", body: `{"queues":["q"],"worker_id":"` + long[:201] + `"}`,
			detail: "worker_id must be at most 200 bytes, got 201"},
		{name: "lease worker control", method: "POST", path: "/v1/worker/lease", body: `{"queues":["q"],"worker_id":"w\t1"}`,
			detail: `worker_id must not contain control characters, got "w\t1"`},
		{name: "lease too many queues", method: "POST", path: "/v1/worker/lease",
			body: `{"queues":["q"` + strings.Repeat(`,"q"`, 100) + `],"worker_id":"w"}`, detail: "queues must name at most 100 queues, got 101"},
		{name: "lease empty queue", method: "POST", path: "/v1/worker/lease", body: `{"queues":["q",""],"worker_id":"w"}`,
			detail: "queues[1] must not be empty"},
		{name: "lease field case", method: "POST", path: "/v1/worker/lease", body: `{"Queues":["q"],"worker_id":"w"}`,
			detail: `unknown field "Queues": field names are case-sensitive (fields: queues, worker_id, max, lease_ms, wait_ms)`},
		{name: "lease queue type", method: "POST", path: "/v1/worker/lease", body: `{"queues":["q",1],"worker_id":"w"}`,
			detail: "every item of queues must be a string, got a number"},
		{name: "lease blank worker", method: "POST", path: "/v1/worker/lease", body: `{"queues":["q"],"worker_id":"  "}`,
			detail: `worker_id must not be blank (only spaces), got "  "`},
		{name: "lease max", method: "POST", path: "/v1/worker/lease", body: `{"queues":["q"],"worker_id":"w","max":1e9}`,
			detail: "max must be a plain integer (no fraction or exponent), got 1e9"},
		{name: "heartbeat overflow", method: "POST", path: "/v1/worker/jobs/x/heartbeat", body: `{"token":"t","lease_ms":` + maxInt64 + `}`,
			detail: "lease_ms " + msRule + ", got " + maxInt64},
		{name: "fail overflow", method: "POST", path: "/v1/worker/jobs/x/fail", body: `{"token":"t","error":"e","retry_in_ms":` + maxInt64 + `}`,
			detail: "retry_in_ms " + msRule + ", got " + maxInt64},
		{name: "requeue overflow", method: "POST", path: "/v1/worker/jobs/x/requeue", body: `{"token":"t","delay_ms":` + maxInt64 + `}`,
			detail: "delay_ms " + msRule + ", got " + maxInt64},
		{name: "pause overflow", method: "POST", path: "/v1/queues/q/pause", body: `{"duration_ms":` + maxInt64 + `}`,
			detail: "duration_ms must be between 0 and 3153600000000 (100 years; 0 or absent pauses until resumed), got " + maxInt64},
		{name: "pause blank queue", method: "POST", path: "/v1/queues/%20/pause", body: `{}`, detail: `queue must not be blank (only spaces), got " "`},
		{name: "tenant max wait", method: "PUT", path: "/v1/tenants/acme", body: `{"max_wait_ms":` + maxInt64 + `}`,
			detail: "max_wait_ms " + msRule + ", got " + maxInt64},
		{name: "tenant weight type", method: "PUT", path: "/v1/tenants/acme", body: `{"weight":2.5}`, detail: "weight must be an integer, got 2.5"},
		{name: "blank tenant limit", method: "PUT", path: "/v1/tenants/%20/limit", body: `{"concurrency":1}`,
			detail: `tenant must not be blank (only spaces), got " "`},
		{name: "blank tenant", method: "PUT", path: "/v1/tenants/%20%20", body: `{"limit":1}`, detail: `tenant must not be blank (only spaces), got "  "`},
		{name: "group ttl", method: "POST", path: "/v1/groups", body: `{"id":"g","ttl_ms":` + maxInt64 + `}`, detail: "ttl_ms " + msRule + ", got " + maxInt64},
		{name: "group interval", method: "POST", path: "/v1/groups", body: `{"id":"g","min_interval_ms":1e40}`, detail: "min_interval_ms " + msRule + ", got 1e40"},
		{name: "blank group", method: "POST", path: "/v1/groups", body: `{"id":" "}`, detail: `id must not be blank (only spaces), got " "`},
		{name: "long job id", method: "GET", path: "/v1/jobs/" + long, status: 404, detail: `unknown job "` + long[:100] + `…"`},
		{name: "long group id", method: "GET", path: "/v1/groups/" + long[:200], status: 404, detail: `unknown group "` + long[:100] + `…"`},
		{name: "long state", method: "GET", path: "/v1/jobs?state=" + long, status: 400,
			detail: `unknown state "` + long[:100] + `…" (states: scheduled, pending, waiting, active, retrying, completed, failed, cancelled, blocked)`},
		{name: "long route", method: "GET", path: "/v1/" + long, status: 404, detail: "no route for GET /v1/" + long[:96] + "…: see /v1/openapi.json"},
		{name: "gzip group", method: "POST", path: "/v1/groups", body: "\x1f\x8b", header: map[string]string{"Content-Encoding": "gzip"}, status: 415,
			detail: `Content-Encoding "gzip" is not supported: send the body uncompressed`},
	}
	for _, c := range cases {
		if c.status == 0 {
			c.status = 400
		}
		t.Run(c.name, func(t *testing.T) { c.run(t, h) })
	}
	// Nothing changed: no queue paused, no tenant set, no group created.
	if r := h.do("GET", "/v1/queues/stats", "", ""); len(r.body["queues"].([]any)) != 0 {
		t.Errorf("stats after the refusals: %s, want no queue", r.raw)
	}
	if r := h.do("GET", "/v1/tenants", "", ""); len(r.body["tenants"].([]any)) != 0 {
		t.Errorf("tenants after the refusals: %s, want none", r.raw)
	}
	if r := h.do("GET", "/v1/groups/g", "", ""); r.status != 404 {
		t.Errorf("group g after the refusals: %d %s, want 404", r.status, r.raw)
	}
}

// A compressed body is told which coding the server takes.
func TestCompressedBodyNamesIdentity(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, true)
	r := h.send("POST", "/v1/jobs", "\x1f\x8b", map[string]string{"Content-Encoding": "br"})
	if r.status != 415 || r.header.Get("Accept-Encoding") != "identity" {
		t.Fatalf("%d Accept-Encoding %q, want 415 and identity", r.status, r.header.Get("Accept-Encoding"))
	}
	if r := h.send("POST", "/v1/jobs", `{"queue":"q","kind":"k"}`, map[string]string{"Content-Encoding": "identity"}); r.status != 201 {
		t.Fatalf("identity: %d %s, want 201", r.status, r.raw)
	}
}

// jobStores opens the job stores whose behaviour may differ: SQLite,
// Redis on miniredis, and real Redis when SLUICE_REDIS_URL is set.
func jobStores(t *testing.T) map[string]backend.Backend {
	t.Helper()
	sq, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlitequeue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.Close() })
	out := map[string]backend.Backend{"sqlite": sq}
	open := func(name string, opts *redis.Options, prefix keyspace.Prefix) {
		c := redis.NewClient(opts)
		b, err := redisqueue.New(c, redisqueue.Options{Prefix: prefix, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close(); c.Close() })
		out[name] = b
	}
	open("miniredis", &redis.Options{Addr: miniredis.RunT(t).Addr()}, "")
	if opts, prefix, ok := redistest.Real(t); ok {
		open("redis", opts, prefix)
	}
	return out
}

// Times at and past the bounds, and a group never created, answer the
// same on every store (before, a run_at in 2300 ran at once on SQLite
// and was scheduled on Redis, both with a 201).
func TestJobTimesAgreeAcrossStores(t *testing.T) {
	t.Parallel()
	ahead := time.Now().Add(99 * 365 * 24 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	cases := []struct {
		name, body string
		status     int
		state      string
		runAt      string // the run_at read back, when set
	}{
		{"year 2300", `{"queue":"q","kind":"k","run_at":"2300-01-01T00:00:00Z"}`, 400, "", ""},
		{"delay overflow", `{"queue":"q","kind":"k","delay_ms":` + maxInt64 + `}`, 400, "", ""},
		{"99 years ahead", `{"queue":"q","kind":"k","run_at":"` + ahead + `"}`, 201, "scheduled", ahead},
		{"longest delay", `{"queue":"q","kind":"k","delay_ms":3153600000000}`, 201, "scheduled", ""},
		{"year 1000", `{"queue":"q","kind":"k","run_at":"1000-01-01T00:00:00Z"}`, 201, "pending", ""},
	}
	for name, b := range jobStores(t) {
		t.Run(name, func(t *testing.T) {
			h := newHarnessOn(t, testConfig, b)
			stored := 0
			for _, c := range cases {
				r := h.do("POST", "/v1/jobs", "", c.body)
				job, _ := r.body["job"].(map[string]any)
				if r.status != c.status || (job != nil && job["state"] != c.state) {
					t.Errorf("%s: %d %s, want %d %s", c.name, r.status, r.raw, c.status, c.state)
					continue
				}
				if c.status != 201 {
					continue
				}
				stored++
				got := h.do("GET", "/v1/jobs/"+jobID(r), "", "")
				if got.body["state"] != c.state || (c.runAt != "" && !sameTime(got.body["run_at"], c.runAt)) {
					t.Errorf("%s: read back %s, want %s at %s", c.name, got.raw, c.state, c.runAt)
				}
			}
			if r := h.do("GET", "/v1/jobs?queue=q", "", ""); len(r.body["jobs"].([]any)) != stored {
				t.Errorf("%d jobs stored, want %d: %s", len(r.body["jobs"].([]any)), stored, r.raw)
			}
			checkLongestLease(t, h)
		})
	}
}

// checkLongestLease leases a job for the longest lease the API takes: its
// deadline is 100 years ahead on every store.
func checkLongestLease(t *testing.T, h *harness) {
	t.Helper()
	if r := h.do("POST", "/v1/jobs", "", `{"queue":"lq","kind":"k"}`); r.status != 201 {
		t.Fatalf("enqueue: %d %s", r.status, r.raw)
	}
	if r := h.do("POST", "/v1/worker/lease", "", `{"queues":["lq"],"worker_id":"w","lease_ms":3153600000001}`); r.status != 400 {
		t.Fatalf("lease over the bound: %d %s, want 400", r.status, r.raw)
	}
	r := h.do("POST", "/v1/worker/lease", "", `{"queues":["lq"],"worker_id":"w","lease_ms":3153600000000}`)
	leases, _ := r.body["leases"].([]any)
	if r.status != 200 || len(leases) != 1 {
		t.Fatalf("lease: %d %s, want one lease", r.status, r.raw)
	}
	until, _ := leases[0].(map[string]any)["job"].(map[string]any)["lease_until"].(string)
	got, err := time.Parse(time.RFC3339Nano, until)
	want := time.Now().Add(queue.MaxDuration)
	if err != nil || got.Before(want.Add(-time.Hour)) || got.After(want.Add(time.Hour)) {
		t.Fatalf("lease_until %q (%v), want about %s", until, err, want)
	}
}

func sameTime(got any, want string) bool {
	s, _ := got.(string)
	a, err1 := time.Parse(time.RFC3339Nano, s)
	b, err2 := time.Parse(time.RFC3339Nano, want)
	return err1 == nil && err2 == nil && a.Equal(b)
}

// A job naming a group never created creates it, with no limits and no
// completion job, on every store; creating the group afterwards is a 409
// that says why. This is the queue's documented contract
// (backend.GroupBackend), so it is pinned here over HTTP.
func TestEnqueueIntoUnknownGroupCreatesIt(t *testing.T) {
	t.Parallel()
	for name, b := range jobStores(t) {
		t.Run(name, func(t *testing.T) {
			h := newHarnessOn(t, testConfig, b)
			if r := h.do("GET", "/v1/groups/crawl-7", "", ""); r.status != 404 {
				t.Fatalf("before: %d %s, want 404", r.status, r.raw)
			}
			if r := h.do("POST", "/v1/jobs", "", `{"queue":"q","kind":"page","group":"crawl-7"}`); r.status != 201 {
				t.Fatalf("enqueue: %d %s, want 201", r.status, r.raw)
			}
			g := h.do("GET", "/v1/groups/crawl-7", "", "")
			jobs, _ := g.body["jobs"].(map[string]any)
			if g.status != 200 || g.body["total"] != 1.0 || jobs["pending"] != 1.0 || g.body["max_concurrency"] != nil || g.body["completion_kind"] != nil {
				t.Fatalf("group: %d %s, want one pending job, no limits, no completion", g.status, g.raw)
			}
			r := h.do("POST", "/v1/groups", "", `{"id":"crawl-7","max_concurrency":2}`)
			want := "a group with this id already exists (a job that names a group creates it: create a group before its jobs)"
			if r.status != 409 || r.body["detail"] != want {
				t.Fatalf("create after: %d %s, want 409 %q", r.status, r.raw, want)
			}
		})
	}
}

// The webhook SSRF guard's refusal, when the server delivers, names the
// config key that allows the address. Not parallel: another test swaps
// webhookGuard.
func TestWebhookRefusalNamesConfigKey(t *testing.T) {
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer rc.Close()
	cfg := config.Default()
	cfg.Storage.DataDir = t.TempDir()
	cfg.Server.Listen = "127.0.0.1:0"
	cfg.Webhooks.Subscriptions = []config.Subscription{{Name: "ops", URL: rc.URL, Events: []string{"job.completed"}}}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, RunOptions{Config: cfg, Logger: slog.New(slog.DiscardHandler), Listening: func(h, _ string) { addr <- h }})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	h := &harness{t: t, http: &httptest.Server{URL: "http://" + <-addr}}
	if r := h.send("POST", "/v1/jobs", `{"queue":"mail","kind":"send"}`, nil); r.status != 201 {
		t.Fatalf("enqueue: %d %s", r.status, r.raw)
	}
	l := h.send("POST", "/v1/worker/lease", `{"queues":["mail"],"worker_id":"w"}`, nil)
	lease := l.body["leases"].([]any)[0].(map[string]any)
	id, tok := lease["job"].(map[string]any)["id"].(string), lease["token"].(string)
	if r := h.send("POST", "/v1/worker/jobs/"+id+"/complete", `{"token":"`+tok+`"}`, nil); r.status != 200 {
		t.Fatalf("complete: %d %s", r.status, r.raw)
	}
	want := "refusing to connect to 127.0.0.1 (loopback address; allow it with webhooks.allow_networks)"
	var ds []any
	testutil.Eventually(t, "a delivery in the log", func() error {
		r := h.send("GET", "/v1/webhooks/ops/deliveries", "", nil)
		if ds, _ = r.body["deliveries"].([]any); len(ds) == 0 {
			return fmt.Errorf("the log says %s", r.raw)
		}
		return nil
	})
	d := ds[0].(map[string]any)
	if e, _ := d["error"].(string); d["outcome"] != string(backend.DeliveryRefused) || !strings.Contains(e, want) {
		t.Fatalf("delivery %v, want refused with an error naming webhooks.allow_networks", d)
	}
}
