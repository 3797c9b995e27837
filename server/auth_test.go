package server

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/server/config"
)

const authConfig = testConfig + `
auth:
  tokens:
    - {name: ops, token: admin-0123456789abcdef, roles: [admin]}
    - {name: api, token: limiter-0123456789abcdef, roles: [limiter]}
    - {name: worker, token: worker-0123456789abcdef, roles: [worker]}
`

func TestAuth(t *testing.T) {
	t.Parallel()
	h := newHarness(t, authConfig, true)
	body := `{"subject":{"member":"1"}}`
	cases := []struct {
		name, method, path, token, body string
		status                          int
		detail                          string
	}{
		{"no token", "POST", "/v1/limits/member/chat", "", body, 401, "missing bearer token: send Authorization: Bearer <token>"},
		{"bad token", "POST", "/v1/limits/member/chat", "limiter-0123456789abcdeX", body, 401, "invalid bearer token"},
		{"wrong role", "POST", "/v1/limits/member/chat", "worker-0123456789abcdef", body, 403, `token "worker" lacks the limiter role`},
		{"right role", "POST", "/v1/limits/member/chat", "limiter-0123456789abcdef", body, 200, ""},
		{"admin may all", "POST", "/v1/limits/member/chat", "admin-0123456789abcdef", body, 200, ""},
		{"producer route", "GET", "/v1/queues/stats", "limiter-0123456789abcdef", "", 403, `token "api" lacks the producer role`},
		{"worker route", "POST", "/v1/worker/lease", "limiter-0123456789abcdef", `{}`, 403, `token "api" lacks the worker role`},
		{"admin route", "PUT", "/v1/tenants/x/limit", "worker-0123456789abcdef", `{}`, 403, `token "worker" lacks the admin role`},
		{"health is public", "GET", "/healthz", "", "", 200, ""},
		{"openapi is public", "GET", "/v1/openapi.json", "", "", 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := h.do(tc.method, tc.path, tc.token, tc.body)
			if r.status != tc.status {
				t.Fatalf("status = %d, want %d: %s", r.status, tc.status, r.raw)
			}
			if tc.detail != "" && r.body["detail"] != tc.detail {
				t.Errorf("detail = %q, want %q", r.body["detail"], tc.detail)
			}
			if tc.status == 401 && r.header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}

func TestNoTokensOnlyOnLoopback(t *testing.T) {
	t.Parallel()
	cases := []struct {
		listen    string
		anonymous bool
		err       error
	}{
		{"127.0.0.1:8080", false, nil},
		{"[::1]:8080", false, nil},
		{"localhost:8080", false, nil},
		{"0.0.0.0:8080", false, ErrNoTokens},
		{":8080", false, ErrNoTokens},
		{"10.1.2.3:8080", false, ErrNoTokens},
		{"0.0.0.0:8080", true, nil},
	}
	for _, tc := range cases {
		cfg := config.Default()
		cfg.Server.Listen, cfg.Auth.AllowAnonymous = tc.listen, tc.anonymous
		_, err := buildAuth(cfg)
		if !errors.Is(err, tc.err) {
			t.Errorf("listen %s anonymous %v: err = %v, want %v", tc.listen, tc.anonymous, err, tc.err)
		}
	}
}

func TestApplySwapsConfig(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, false)
	body := `{"subject":{"member":"7"}}`
	h.do("POST", "/v1/limits/member/export-usage", "", body)
	if r := h.do("POST", "/v1/limits/member/export-usage", "", body); r.status != 429 {
		t.Fatalf("want 429 before reload, got %d", r.status)
	}
	// Raise the quota, same window: the count carries over (1 used of 3).
	cfg, err := config.Parse([]byte(`
limits:
  scenes:
    member:
      subject: [member]
      policies:
        export-usage: {limits: [{quota: 3, window: 60s}]}
`), "new.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.srv.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	if r := h.do("POST", "/v1/limits/member/export-usage", "", body); r.status != 200 || remaining(r) != 1 {
		t.Fatalf("after reload: %d %s", r.status, r.raw)
	}
	if r := h.do("POST", "/v1/limits/out-link/request", "", `{}`); r.status != 404 {
		t.Errorf("removed scene: %d", r.status)
	}
	// A config that cannot be served is refused and the old one stays.
	bad := config.Default()
	bad.Server.Listen = "0.0.0.0:8080"
	if err := h.srv.Apply(bad); !errors.Is(err, ErrNoTokens) {
		t.Fatalf("Apply = %v, want ErrNoTokens", err)
	}
	if r := h.do("POST", "/v1/limits/member/export-usage", "", body); r.status != 200 {
		t.Errorf("old config lost: %d", r.status)
	}
}

// Requests keep being answered while the config is swapped under them;
// run with -race.
func TestApplyDuringRequests(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, false)
	a, err := config.Parse([]byte(testConfig), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := config.Parse([]byte(strings.Replace(testConfig, "quota: 1, window: 60s", "quota: 1000, window: 60s", 1)), "b.yaml")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 {
			if err := h.srv.Apply([]*config.Config{a, b}[i%2]); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := 0; i < 100; i++ {
		r := h.do("POST", "/v1/limits/member/export-usage", "", `{"subject":{"member":"`+strconv.Itoa(i%5)+`"}}`)
		if r.status != 200 && r.status != 429 {
			t.Fatalf("status %d: %s", r.status, r.raw)
		}
	}
	<-done
}
