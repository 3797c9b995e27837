package server

import (
	"context"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// alignTo advances the harness clock to offset past a boundary of w.
func (h *harness) alignTo(w, offset time.Duration) {
	now := time.Duration(h.clk.Now().UnixNano())
	h.clk.Advance((offset - now%w + w) % w)
}

// TestLimitWindowStartsAtFirstCall: 1 per minute admits a call 100ms
// before a minute boundary and refuses one 200ms later, with Retry-After,
// the RateLimit reset and the body pointing at a minute after the first.
func TestLimitWindowStartsAtFirstCall(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, false)
	body := `{"subject":{"member":"42"}}`
	h.alignTo(time.Minute, time.Minute-100*time.Millisecond)
	r := h.do("POST", "/v1/limits/member/export-usage", "", body)
	if r.status != 200 || r.header.Get("RateLimit") != `"member/export-usage";r=0;t=60` {
		t.Fatalf("first: %d RateLimit %q, want 200 with t=60", r.status, r.header.Get("RateLimit"))
	}
	h.clk.Advance(200 * time.Millisecond)
	r = h.do("POST", "/v1/limits/member/export-usage", "", body)
	if r.status != 429 || r.header.Get("Retry-After") != "60" || r.header.Get("RateLimit") != `"member/export-usage";r=0;t=60` ||
		r.body["retry_after_ms"] != 59800.0 {
		t.Errorf("200ms later across the boundary: %d Retry-After %q RateLimit %q %s, want 429, 60, t=60, retry_after_ms 59800",
			r.status, r.header.Get("Retry-After"), r.header.Get("RateLimit"), r.raw)
	}
	h.clk.Advance(59800 * time.Millisecond)
	if r := h.do("POST", "/v1/limits/member/export-usage", "", body); r.status != 200 {
		t.Errorf("a minute after the first: %d %s, want 200", r.status, r.raw)
	}
}

// TestLimitCostAboveQuota: a cost above the quota of any limit of the
// policy can never be admitted: 422 naming the cost and the limit, without
// Retry-After, counting nothing; at the quota it passes.
func TestLimitCostAboveQuota(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, false)
	tests := []struct {
		path, body, detail string
		wantQuota          float64
	}{
		{"/v1/limits/member/export-usage", `{"subject":{"member":"1"},"cost":2}`,
			"Cost 2 exceeds the quota: at most 1 every 60 seconds, so the request can never be admitted", 1},
		// 3 per second and 10 per minute: 5 fits the minute, never the second.
		{"/v1/limits/member/chat", `{"subject":{"member":"1"},"cost":5}`,
			"Cost 5 exceeds the quota: at most 3 every 1 seconds, so the request can never be admitted", 3},
	}
	for _, tc := range tests {
		r := h.do("POST", tc.path, "", tc.body)
		limit, _ := r.body["limit"].(map[string]any)
		if r.status != 422 || r.body["detail"] != tc.detail || r.header.Get("Retry-After") != "" ||
			r.header.Get("RateLimit") != "" || limit["quota"] != tc.wantQuota || r.header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s %s: %d %v %s, want 422 %q without Retry-After", tc.path, tc.body, r.status, r.header, r.raw, tc.detail)
		}
	}
	if r := h.do("POST", "/v1/limits/member/chat", "", `{"subject":{"member":"1"},"cost":3}`); r.status != 200 || remaining(r) != 0 {
		t.Errorf("cost 3 after the refusals: %d %s, want 200 with nothing counted before", r.status, r.raw)
	}
}

// TestRLSCostAboveQuota: on the Envoy path a hits_addend above the quota
// is OVER_LIMIT, not an error Envoy would let through by default, and
// counts nothing.
func TestRLSCostAboveQuota(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, false)
	c := rlsClient(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	link := desc("link", "L", "uid", "u")
	link.HitsAddend = wrapperspb.UInt64(3)
	resp, err := c.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*corev3.RateLimitDescriptor{link}})
	if err != nil || resp.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT || resp.Statuses[0].CurrentLimit.GetRequestsPerUnit() != 2 {
		t.Fatalf("hits_addend 3 on a quota of 2: %v, %v; want OVER_LIMIT naming the limit", resp, err)
	}
	if r := h.do("POST", "/v1/limits/out-link/request/peek", "", `{"subject":{"out-link":"L","uid":"u"}}`); remaining(r) != 2 {
		t.Errorf("after the refusal: %s, want nothing counted", r.raw)
	}
}
