package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/server/config"
)

const metricsToken = "metrics-0123456789abcdef"

func TestMetricsToken(t *testing.T) {
	t.Parallel()
	h := newHarness(t, authConfig+"metrics:\n  token: "+metricsToken+"\n", false)
	// A request is counted once its handler has returned, which may be
	// after its client has the answer: wait until one has been, so that
	// the series exists whichever subtest is served first.
	testutil.Eventually(t, "a request counted", func() error {
		if r := h.do("GET", "/metrics", "admin-0123456789abcdef", ""); !strings.Contains(r.raw, "sluice_http_requests_total") {
			return fmt.Errorf("status %d, no sluice_http_requests_total yet", r.status)
		}
		return nil
	})
	cases := []struct {
		name, token string
		status      int
		detail      string
	}{
		{"no token", "", 401, "missing bearer token: /metrics needs metrics.token (Authorization: Bearer <token>)"},
		{"unknown token", "metrics-0123456789abcdeX", 401, "invalid bearer token for /metrics"},
		{"token of another role", "limiter-0123456789abcdef", 403, `token "api" may not read /metrics: use metrics.token or an admin token`},
		{"metrics token", metricsToken, 200, ""},
		{"admin token", "admin-0123456789abcdef", 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := h.do("GET", "/metrics", tc.token, "")
			if r.status != tc.status {
				t.Fatalf("status = %d, want %d: %s", r.status, tc.status, r.raw)
			}
			if tc.detail != "" && r.body["detail"] != tc.detail {
				t.Errorf("detail = %q, want %q", r.body["detail"], tc.detail)
			}
			if tc.status == 401 && r.header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if tc.status == 200 && !strings.Contains(r.raw, "sluice_http_requests_total") {
				t.Errorf("no metrics in the answer:\n%.300s", r.raw)
			}
		})
	}
}

// The token follows the config: a reload sets, changes or lifts it, and a
// server without tokens (loopback) still needs metrics.token.
func TestMetricsTokenReload(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, false)
	apply := func(doc string) {
		t.Helper()
		cfg, err := config.Parse([]byte(doc), "test.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if err := h.srv.Apply(cfg); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		doc    string
		token  string
		status int
	}{
		{testConfig, "", 200},
		{testConfig + "metrics: {token: " + metricsToken + "}\n", "", 401},
		{testConfig + "metrics: {token: " + metricsToken + "}\n", metricsToken, 200},
		{testConfig + "metrics: {token: other-0123456789abcdef}\n", metricsToken, 401},
		{testConfig, "", 200},
	}
	for i, s := range steps {
		apply(s.doc)
		if r := h.do("GET", "/metrics", s.token, ""); r.status != s.status {
			t.Fatalf("step %d: status = %d, want %d: %.200s", i, r.status, s.status, r.raw)
		}
	}
}
