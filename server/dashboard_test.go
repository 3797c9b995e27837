package server

import (
	"fmt"
	"strings"
	"testing"
)

// The dashboard's page is public, exact at "/", and does not swallow the
// 404 and 405 answers of other paths.
func TestDashboardMounted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig+authTokens, true)
	tests := []struct {
		method, path string
		status       int
		want         string
	}{
		{"GET", "/", 200, "<!doctype html>"},
		{"HEAD", "/", 200, ""},
		{"GET", "/ui/nope.js", 404, "dashboard: no file /ui/nope.js"},
		{"GET", "/nope", 404, "no route for GET /nope"},
		{"POST", "/", 405, "POST is not allowed on /"},
		{"GET", "/v1/activity/limits", 401, "missing bearer token"},
	}
	for _, tt := range tests {
		r := h.do(tt.method, tt.path, "", "")
		if r.status != tt.status || !strings.Contains(strings.ToLower(r.raw), strings.ToLower(tt.want)) {
			t.Errorf("%s %s = %d %q, want %d with %q", tt.method, tt.path, r.status, r.raw, tt.status, tt.want)
		}
	}
	r := h.do("GET", "/", "", "")
	if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
}

const authTokens = `
auth:
  tokens:
    - {name: ops, token: "admin-token-0123456789", roles: [admin]}
    - {name: svc, token: "limiter-token-0123456789", roles: [limiter]}
`

func TestLimitActivity(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, false)
	for range 3 { // quota 1: one allowed, two denied
		h.do("POST", "/v1/limits/member/export-usage", "", `{"subject":{"member":"7"}}`)
	}
	for range 2 { // shadow scene, quota 1: one shadow denial
		h.do("POST", "/v1/limits/team/chat-qpm", "", `{"subject":{"team":"t"}}`)
	}
	r := h.do("GET", "/v1/activity/limits", "", "")
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	got := map[string]string{}
	for _, p := range r.body["policies"].([]any) {
		p := p.(map[string]any)
		tot := p["totals"].(map[string]any)
		series := p["series"].(map[string]any)
		if n := len(series["allowed"].([]any)); n != 60 {
			t.Errorf("%s/%s: %d points, want 60", p["scene"], p["policy"], n)
		}
		got[p["scene"].(string)+"/"+p["policy"].(string)] = fmt.Sprintf("allowed=%v denied=%v shadow=%v window.denied=%v",
			tot["allowed"], tot["denied"], tot["shadow_denied"], p["window"].(map[string]any)["denied"])
	}
	want := map[string]string{
		"member/export-usage": "allowed=1 denied=2 shadow=0 window.denied=2",
		"team/chat-qpm":       "allowed=2 denied=0 shadow=1 window.denied=0",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %q, want %q", k, got[k], w)
		}
	}
}

func TestQueueActivityAndCounts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, true)
	for i, tenant := range []string{"acme", "acme", "acme", "globex", "globex", ""} {
		if r := h.do("POST", "/v1/jobs", "", fmt.Sprintf(`{"queue":"mail","kind":"send","tenant":%q,"group":"g%d"}`, tenant, i%2)); r.status != 201 {
			t.Fatalf("enqueue: %d %s", r.status, r.raw)
		}
	}
	r := h.do("POST", "/v1/worker/lease", "", `{"queues":["mail"],"worker_id":"w1","max":2}`)
	leases := r.body["leases"].([]any)
	l := leases[0].(map[string]any)
	id, tok := l["job"].(map[string]any)["id"].(string), l["token"].(string)
	if c := h.do("POST", "/v1/worker/jobs/"+id+"/complete", "", `{"token":"`+tok+`"}`); c.status != 200 {
		t.Fatalf("complete: %d %s", c.status, c.raw)
	}

	a := h.do("GET", "/v1/activity/queues", "", "")
	q := a.body["queues"].([]any)[0].(map[string]any)
	tot := q["totals"].(map[string]any)
	if q["queue"] != "mail" || tot["enqueued"] != 6.0 || tot["started"] != 2.0 || tot["completed"] != 1.0 {
		t.Errorf("activity = %s", a.raw)
	}
	if lat := q["latency"].(map[string]any); lat["samples"] != 2.0 || lat["p99_ms"] == nil {
		t.Errorf("latency = %v", lat)
	}

	tests := []struct {
		query string
		want  string // key:total/active per row, in order
	}{
		// Tenants take turns at equal priority, so the lease of two hands
		// out acme's first job and globex's first job; acme's is completed.
		{"by=tenant", "globex:2/1 acme:3/0 :1/0"},
		{"by=tenant&state=pending", "acme:2/0 :1/0 globex:1/0"},
		{"by=group&state=completed", "g0:1/0"},
		{"by=queue", "mail:6/1"},
		{"by=kind&queue=other", ""},
	}
	for _, tt := range tests {
		c := h.do("GET", "/v1/queues/counts?"+tt.query, "", "")
		if c.status != 200 {
			t.Fatalf("%s: %d %s", tt.query, c.status, c.raw)
		}
		var rows []string
		for _, row := range c.body["rows"].([]any) {
			row := row.(map[string]any)
			counts := row["counts"].(map[string]any)
			active, _ := counts["active"].(float64)
			rows = append(rows, fmt.Sprintf("%s:%v/%v", row["key"], row["total"], active))
		}
		if got := strings.Join(rows, " "); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.query, got, tt.want)
		}
	}
	for _, bad := range []struct{ query, want string }{
		{"", `by must be one of tenant, group, kind, queue; got ""`},
		{"by=tenant&state=done", `unknown state "done"`},
	} {
		if c := h.do("GET", "/v1/queues/counts?"+bad.query, "", ""); c.status != 400 || !strings.Contains(fmt.Sprint(c.body["detail"]), bad.want) {
			t.Errorf("%q: %d %s, want 400 with %q", bad.query, c.status, c.raw, bad.want)
		}
	}
}
