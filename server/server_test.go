package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
	"github.com/sluicehq/sluice/server/config"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testConfig = `
limits:
  scenes:
    member:
      subject: [member]
      policies:
        export-usage: {limits: [{quota: 1, window: 60s}]}
        chat: {limits: [{quota: 3, window: 1s}, {quota: 10, window: 1m}]}
    out-link:
      subject: [out-link, uid]
      policies:
        request: {limits: [{quota: 2, window: 60s}]}
    team:
      subject: [team]
      shadow: true
      policies:
        chat-qpm: {limits: [{quota: 1, window: 60s}]}
  envoy:
    - domain: edge
      scene: member
      policy_key: action
      entries:
        - {key: action}
        - {key: member_id, subject: member}
    - domain: edge
      scene: out-link
      policy: request
      entries:
        - {key: link, subject: out-link}
        - {key: uid, subject: uid}
`

type harness struct {
	t    *testing.T
	srv  *Server
	http *httptest.Server
	clk  *clock.Fake
}

func newHarness(t *testing.T, doc string, withQueue bool) *harness {
	t.Helper()
	cfg, err := config.Parse([]byte(doc), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return newHarnessCfg(t, cfg, withQueue)
}

func newHarnessCfg(t *testing.T, cfg *config.Config, withQueue bool) *harness {
	t.Helper()
	// A store timeout no load reaches: with the default 100ms a busy
	// machine could turn a decision a test checks into the failure mode.
	cfg.Limits.Timeout = config.Duration(testutil.Patience)
	clk := clock.NewFake(clock.Real.Now())
	store := memlimit.New(memlimit.Options{Clock: clk, SweepInterval: -1})
	t.Cleanup(func() { store.Close() })
	opts := Options{Config: cfg, Limits: store, Logger: slog.New(slog.DiscardHandler)}
	if withQueue {
		b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlitequeue.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		opts.Queue = b
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &harness{t: t, srv: srv, http: hs, clk: clk}
}

type reply struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (h *harness) do(method, path, token, body string) reply {
	h.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, h.http.URL+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := h.http.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

func TestLimitAllowThenDeny(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, false)
	body := `{"subject":{"member":"42"}}`
	r := h.do("POST", "/v1/limits/member/export-usage", "", body)
	if r.status != 200 || r.body["allowed"] != true {
		t.Fatalf("first: %d %s", r.status, r.raw)
	}
	if got, want := r.header.Get("RateLimit-Policy"), `"member/export-usage";q=1;w=60`; got != want {
		t.Errorf("RateLimit-Policy = %q, want %q", got, want)
	}
	if got := r.header.Get("RateLimit"); !strings.HasPrefix(got, `"member/export-usage";r=0;t=`) {
		t.Errorf("RateLimit = %q", got)
	}
	r = h.do("POST", "/v1/limits/member/export-usage", "", body)
	if r.status != 429 || r.body["allowed"] != false {
		t.Fatalf("second: %d %s", r.status, r.raw)
	}
	if r.header.Get("Content-Type") != "application/problem+json" || r.header.Get("Retry-After") == "" {
		t.Errorf("429 headers: %v", r.header)
	}
	if got, want := r.body["detail"], "Too many requests: 1 every 60 seconds"; got != want {
		t.Errorf("detail = %v, want %v", got, want)
	}
	// Another member has its own counter.
	if r := h.do("POST", "/v1/limits/member/export-usage", "", `{"subject":{"member":43}}`); r.status != 200 {
		t.Errorf("other member: %d %s", r.status, r.raw)
	}
	// Advancing past the window admits again.
	h.clk.Advance(60_000_000_000)
	if r := h.do("POST", "/v1/limits/member/export-usage", "", body); r.status != 200 {
		t.Errorf("after the window: %d %s", r.status, r.raw)
	}
}

func TestLimitCostPeekAndShadow(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, false)
	link := `"subject":{"out-link":"L1","uid":"u1"}`
	if r := h.do("POST", "/v1/limits/out-link/request/peek", "", "{"+link+"}"); r.status != 200 || remaining(r) != 2 {
		t.Fatalf("peek: %d %s", r.status, r.raw)
	}
	if r := h.do("POST", "/v1/limits/out-link/request", "", "{"+link+`,"cost":2}`); r.status != 200 || remaining(r) != 0 {
		t.Fatalf("cost 2: %d %s", r.status, r.raw)
	}
	if r := h.do("POST", "/v1/limits/out-link/request/peek", "", "{"+link+"}"); r.status != 200 || remaining(r) != 0 {
		t.Fatalf("peek after: %d %s", r.status, r.raw)
	}
	if r := h.do("POST", "/v1/limits/out-link/request", "", "{"+link+"}"); r.status != 429 {
		t.Fatalf("over: %d %s", r.status, r.raw)
	}
	// Shadow scene: the second call is over the limit but allowed.
	team := `{"subject":{"team":"t"}}`
	h.do("POST", "/v1/limits/team/chat-qpm", "", team)
	r := h.do("POST", "/v1/limits/team/chat-qpm", "", team)
	if r.status != 200 || r.body["shadow_denied"] != true || r.header.Get("Retry-After") != "" {
		t.Fatalf("shadow: %d %v %s", r.status, r.header, r.raw)
	}
	m := h.do("GET", "/metrics", "", "")
	for _, want := range []string{
		`sluice_limit_decisions_total{outcome="denied",policy="request",scene="out-link"} 1`,
		`sluice_limit_shadow_denials_total{policy="chat-qpm",scene="team"} 1`,
		`sluice_limit_decisions_total{outcome="shadow_denied",policy="chat-qpm",scene="team"} 1`,
	} {
		if !strings.Contains(m.raw, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func remaining(r reply) float64 {
	limits, _ := r.body["limits"].([]any)
	if len(limits) == 0 {
		return -1
	}
	return limits[0].(map[string]any)["remaining"].(float64)
}

func TestBadInputs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, true)
	big := `{"subject":{"member":"` + strings.Repeat("x", 1<<20) + `"}}`
	cases := []struct {
		name, method, path, body string
		status                   int
		detail                   string
	}{
		{"unknown scene", "POST", "/v1/limits/nope/x", `{}`, 404, `unknown scene "nope" (scenes: member, out-link, team)`},
		{"unknown policy", "POST", "/v1/limits/member/nope", `{}`, 404, `unknown policy "nope" in scene "member" (policies: chat, export-usage)`},
		{"missing subject", "POST", "/v1/limits/out-link/request", `{"subject":{"out-link":"a"}}`, 400, `missing subject field "uid" for scene "out-link" (fields: out-link, uid)`},
		{"unknown subject", "POST", "/v1/limits/member/chat", `{"subject":{"member":"a","team":"b"}}`, 400, `unknown subject field "team" for scene "member" (fields: member)`},
		{"empty subject", "POST", "/v1/limits/member/chat", `{"subject":{"member":""}}`, 400, `subject field "member" must not be empty`},
		{"subject type", "POST", "/v1/limits/member/chat", `{"subject":{"member":true}}`, 400, `subject field "member" must be a string or a number`},
		{"negative cost", "POST", "/v1/limits/member/chat", `{"subject":{"member":"a"},"cost":-1}`, 400, "cost must not be negative, got -1"},
		{"cost type", "POST", "/v1/limits/member/chat", `{"subject":{"member":"a"},"cost":"x"}`, 400, "cost must be an integer, got a string"},
		{"bad json", "POST", "/v1/limits/member/chat", `{"subject":`, 400, "bad JSON: the body ends in the middle of a value"},
		{"bad json syntax", "POST", "/v1/limits/member/chat", `{"subject" 1}`, 400, "bad JSON at byte 12: invalid character '1' after object key"},
		{"unknown field", "POST", "/v1/limits/member/chat", `{"subjects":{}}`, 400, `unknown field "subjects" (fields: subject, cost, wait_ms, at_most, lease_id)`},
		{"two values", "POST", "/v1/limits/member/chat", `{"subject":{"member":"a"}} {}`, 400, "request body must hold exactly one JSON value"},
		{"empty body", "POST", "/v1/limits/member/chat", ``, 400, "request body is empty: send a JSON object"},
		{"too large", "POST", "/v1/limits/member/chat", big, 413, "request body is larger than the limit of 1048576 bytes"},
		{"unknown route", "GET", "/v1/nothing", ``, 404, "no route for GET /v1/nothing: see /v1/openapi.json"},
		{"wrong method", "GET", "/v1/limits/member/chat", ``, 405, "GET is not allowed on /v1/limits/{scene}/{policy} (allowed: POST)"},
		{"unknown job", "GET", "/v1/jobs/nope", ``, 404, `unknown job "nope"`},
		{"cancel unknown job", "POST", "/v1/jobs/nope/cancel", ``, 404, `unknown job "nope"`},
		{"job without queue", "POST", "/v1/jobs", `{"kind":"k"}`, 400, "queue must not be empty"},
		{"job bad priority", "POST", "/v1/jobs", `{"queue":"q","kind":"k","priority":-1}`, 400, "priority must be between 0 and 1048575, got -1"},
		{"batch bad spec", "POST", "/v1/jobs/batch", `{"jobs":[{"queue":"q","kind":"k"},{"queue":"q"}]}`, 400, "jobs[1].kind must not be empty"},
		{"batch empty", "POST", "/v1/jobs/batch", `{"jobs":[]}`, 400, "jobs must hold 1 to 1000 jobs, got 0"},
		{"batch bad delay", "POST", "/v1/jobs/batch", `{"jobs":[{"queue":"q","kind":"k","delay_ms":-5}]}`, 400, "jobs[0].delay_ms must be between 0 and 3153600000000 (100 years), got -5"},
		{"list bad state", "GET", "/v1/jobs?state=done", ``, 400, `unknown state "done" (states: scheduled, pending, waiting, active, retrying, completed, failed, cancelled, blocked)`},
		{"list bad limit", "GET", "/v1/jobs?limit=0", ``, 400, `limit must be an integer from 1 to 1000, got "0"`},
		{"lease no queues", "POST", "/v1/worker/lease", `{"worker_id":"w"}`, 400, "queues must name at least one queue"},
		{"lease no worker", "POST", "/v1/worker/lease", `{"queues":["q"]}`, 400, "worker_id is required"},
		{"lease wait", "POST", "/v1/worker/lease", `{"queues":["q"],"worker_id":"w","wait_ms":600000}`, 400, "wait_ms must be between 0 and 60000, got 600000"},
		{"complete no token", "POST", "/v1/worker/jobs/x/complete", `{}`, 400, "token is required: the lease token the job was leased with"},
		{"complete unknown", "POST", "/v1/worker/jobs/x/complete", `{"token":"t"}`, 404, `unknown job "x"`},
		{"fail no error", "POST", "/v1/worker/jobs/x/fail", `{"token":"t"}`, 400, "error is required: say why the attempt failed"},
		{"content type", "POST", "/v1/jobs", `queue=q`, 415, `Content-Type must be application/json, got "text/plain"`},
		{"tenant limit missing", "PUT", "/v1/tenants/acme/limit", `{}`, 400, "concurrency is required: the number of the tenant's jobs that may run at once (0 follows the default, -1 lifts the limit)"},
		{"tenant limit bad", "PUT", "/v1/tenants/acme/limit", `{"concurrency":-2}`, 400, "concurrency must be -1 (unlimited), 0 (default) or positive, got -2"},
		{"tenant weight bad", "PUT", "/v1/tenants/acme", `{"weight":-1}`, 400, "weight must be between 0 (default) and 1000, got -1"},
		{"job unique for alone", "POST", "/v1/jobs", `{"queue":"q","kind":"k","unique_for_ms":1000}`, 400, "unique_for_ms is set without a unique key"},
		{"group completion without kind", "POST", "/v1/groups", `{"id":"g","completion_queue":"reports"}`, 400, "completion_kind must be set when a completion queue or payload is"},
		{"unknown group", "GET", "/v1/groups/nope", ``, 404, `unknown group "nope"`},
		{"group without id", "POST", "/v1/groups", `{"max_concurrency":2}`, 400, "id must not be empty"},
		{"group negative ttl", "POST", "/v1/groups", `{"id":"g","ttl_ms":-1}`, 400, "ttl_ms must be between 0 and 3153600000000 (100 years), got -1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var r reply
			if tc.name == "content type" {
				r = h.doType(tc.method, tc.path, "text/plain", tc.body)
			} else {
				r = h.do(tc.method, tc.path, "", tc.body)
			}
			if r.status != tc.status {
				t.Fatalf("status = %d, want %d: %s", r.status, tc.status, r.raw)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if tc.detail != "" && r.body["detail"] != tc.detail {
				t.Errorf("detail = %q\nwant     %q", r.body["detail"], tc.detail)
			}
		})
	}
}

func (h *harness) doType(method, path, ctype, body string) reply {
	req, _ := http.NewRequest(method, h.http.URL+path, bytes.NewBufferString(body))
	req.Header.Set("Content-Type", ctype)
	resp, err := h.http.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

// A Go service that defines the same scene on the same store shares the
// server's counters: the key is built the same way.
func TestSharesCountersWithGoLimiters(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte(testConfig), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	store := memlimit.New(memlimit.Options{SweepInterval: -1})
	defer store.Close()
	srv, err := New(Options{Config: cfg, Limits: store, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	h := &harness{t: t, srv: srv, http: hs}
	lim, err := ratelimit.Define(store, ratelimit.Definition[string]{
		Scene:   "member",
		Policy:  func(string) string { return "export-usage" },
		Subject: func(id string) []string { return []string{"member", id} },
		Limits:  func(string) []ratelimit.Limit { return []ratelimit.Limit{ratelimit.PerMinute(1)} },
	})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := lim.Allow(context.Background(), "42"); !ok || err != nil {
		t.Fatalf("Go limiter: %v %v", ok, err)
	}
	if r := h.do("POST", "/v1/limits/member/export-usage", "", `{"subject":{"member":"42"}}`); r.status != 429 {
		t.Fatalf("HTTP after the Go call: %d %s", r.status, r.raw)
	}
}
