package server

import (
	"context"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

const replacesConfig = `
limits:
  scenes:
    ip:
      subject: [ip]
      policies:
        any: {limits: [{quota: 1, window: 1h}]}
        vip: {limits: [{quota: 100, window: 1h}]}
  envoy:
    - {domain: edge, scene: ip, policy: any, name: per-ip, entries: [{key: remote_address, subject: ip}]}
    - {domain: edge, scene: ip, policy: vip, replaces: [per-ip], entries: [{key: plan, value: vip}, {key: remote_address, subject: ip}]}
`

// TestRLSReplaces: a request whose vip descriptor matches is not limited
// by the per-ip rule it replaces; one without it is.
func TestRLSReplaces(t *testing.T) {
	t.Parallel()
	h := newHarness(t, replacesConfig, false)
	c := rlsClient(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ask := func(ds ...*corev3.RateLimitDescriptor) rlsv3.RateLimitResponse_Code {
		t.Helper()
		resp, err := c.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: ds})
		if err != nil {
			t.Fatal(err)
		}
		return resp.OverallCode
	}
	ip, vip := desc("remote_address", "10.0.0.1"), desc("plan", "vip", "remote_address", "10.0.0.1")
	for i := range 3 {
		if got := ask(ip, vip); got != rlsv3.RateLimitResponse_OK {
			t.Fatalf("vip request %d: %v, want OK (per-ip replaced)", i, got)
		}
	}
	if got := ask(ip); got != rlsv3.RateLimitResponse_OK {
		t.Fatalf("first plain request: %v, want OK", got)
	}
	if got := ask(ip); got != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Errorf("second plain request: %v, want OVER_LIMIT", got)
	}
}
