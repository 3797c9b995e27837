package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
	"github.com/sluicehq/sluice/server/config"
)

// faultyStore wraps a real store and fails every call while down is set,
// the way an unreachable Redis does.
type faultyStore struct {
	ratelimit.Store
	down atomic.Bool
}

func (f *faultyStore) Consume(ctx context.Context, reqs ...ratelimit.Request) (ratelimit.Decision, error) {
	if f.down.Load() {
		return ratelimit.Decision{}, &ratelimit.StoreError{Op: "consume", Err: errors.New("connection refused")}
	}
	return f.Store.Consume(ctx, reqs...)
}

const faultConfig = `
limits:
  scenes:
    chat:
      subject: [team]
      policies:
        qpm: {limits: [{quota: 5, window: 60s}]}
    auth:
      subject: [account]
      failure_mode: closed
      policies:
        login: {limits: [{quota: 5, window: 60s}]}
  envoy:
    - domain: edge
      scene: auth
      policy: login
      entries: [{key: account, subject: account}]
`

func TestStoreDownAppliesFailureMode(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte(faultConfig), "fault.yaml")
	if err != nil {
		t.Fatal(err)
	}
	mem := memlimit.New(memlimit.Options{SweepInterval: -1})
	defer mem.Close()
	store := &faultyStore{Store: mem}
	var ready atomic.Bool
	ready.Store(true)
	srv, err := New(Options{Config: cfg, Limits: store, Logger: slog.New(slog.DiscardHandler), Ready: func(context.Context) error {
		if !ready.Load() {
			return errors.New("redis: connection refused")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	h := &harness{t: t, srv: srv, http: hs}
	store.down.Store(true)
	ready.Store(false)

	open := h.do("POST", "/v1/limits/chat/qpm", "", `{"subject":{"team":"t"}}`)
	if open.status != 200 || open.body["failure_mode"] != "open" || open.body["allowed"] != true {
		t.Errorf("fail-open scene: %d %s", open.status, open.raw)
	}
	closed := h.do("POST", "/v1/limits/auth/login", "", `{"subject":{"account":"a"}}`)
	if closed.status != 503 || closed.header.Get("Retry-After") != "1" ||
		closed.body["detail"] != `rate-limit store unavailable and scene "auth" fails closed: retry later` {
		t.Errorf("fail-closed scene: %d %v %s", closed.status, closed.header, closed.raw)
	}
	if r := h.do("GET", "/readyz", "", ""); r.status != 503 || strings.Contains(r.raw, "refused") {
		t.Errorf("readyz: %d %s (must not leak the cause)", r.status, r.raw)
	}
	resp, err := rlsClient(t, h).ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{
		Domain: "edge", Descriptors: []*corev3.RateLimitDescriptor{desc("account", "a")},
	})
	if err != nil || resp.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Errorf("RLS on a fail-closed scene with the store down: %v %v", resp, err)
	}
	m := h.do("GET", "/metrics", "", "")
	for _, want := range []string{
		`sluice_limit_failure_mode_total{mode="open",policy="qpm",scene="chat"} 1`,
		`sluice_limit_failure_mode_total{mode="closed",policy="login",scene="auth"} 2`,
		`sluice_limit_decisions_total{outcome="failure_closed",policy="login",scene="auth"} 2`,
	} {
		if !strings.Contains(m.raw, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// Back up: decisions come from the store again.
	store.down.Store(false)
	ready.Store(true)
	if r := h.do("POST", "/v1/limits/auth/login", "", `{"subject":{"account":"a"}}`); r.status != 200 || r.body["failure_mode"] != nil {
		t.Errorf("after recovery: %d %s", r.status, r.raw)
	}
	if r := h.do("GET", "/readyz", "", ""); r.status != 200 {
		t.Errorf("readyz after recovery: %d", r.status)
	}
}
