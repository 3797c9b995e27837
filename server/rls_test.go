package server

import (
	"context"
	"net"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func rlsClient(t *testing.T, h *harness) rlsv3.RateLimitServiceClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	h.srv.RegisterGRPC(g)
	done := make(chan struct{})
	go func() { defer close(done); _ = g.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); g.Stop(); <-done })
	return rlsv3.NewRateLimitServiceClient(conn)
}

func desc(kv ...string) *corev3.RateLimitDescriptor {
	d := &corev3.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &corev3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

func TestRLS(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, false)
	c := rlsClient(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ask := func(ds ...*corev3.RateLimitDescriptor) *rlsv3.RateLimitResponse {
		t.Helper()
		resp, err := c.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: ds})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	export := desc("action", "export-usage", "member_id", "9")
	resp := ask(export)
	st := resp.Statuses[0]
	if resp.OverallCode != rlsv3.RateLimitResponse_OK || st.CurrentLimit.RequestsPerUnit != 1 ||
		st.CurrentLimit.Unit != rlsv3.RateLimitResponse_RateLimit_MINUTE || st.LimitRemaining != 0 {
		t.Fatalf("first: %v", resp)
	}
	if d := st.DurationUntilReset.AsDuration(); d <= 0 || d > time.Minute {
		t.Errorf("duration until reset = %v", d)
	}
	// Over the limit, and the whole request with it; the unmatched
	// descriptor is OK without a limit.
	resp = ask(export, desc("unknown", "x"))
	if resp.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT || resp.Statuses[0].Code != rlsv3.RateLimitResponse_OVER_LIMIT ||
		resp.Statuses[1].Code != rlsv3.RateLimitResponse_OK || resp.Statuses[1].CurrentLimit != nil {
		t.Fatalf("second: %v", resp)
	}
	// The counter is the HTTP API's counter: same scene, policy, subject.
	if r := h.do("POST", "/v1/limits/member/export-usage/peek", "", `{"subject":{"member":"9"}}`); remaining(r) != 0 {
		t.Errorf("HTTP peek after RLS: %s", r.raw)
	}
	// A fixed policy with two subject fields, and a per-descriptor
	// hits_addend.
	link := desc("link", "L", "uid", "u")
	link.HitsAddend = wrapperspb.UInt64(2)
	if resp := ask(link); resp.OverallCode != rlsv3.RateLimitResponse_OK || resp.Statuses[0].LimitRemaining != 0 {
		t.Fatalf("link: %v", resp)
	}
	if resp := ask(desc("link", "L", "uid", "u")); resp.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("link over: %v", resp)
	}
	// Another domain matches nothing.
	resp, err := c.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "other", Descriptors: []*corev3.RateLimitDescriptor{export}})
	if err != nil || resp.OverallCode != rlsv3.RateLimitResponse_OK {
		t.Fatalf("other domain: %v %v", resp, err)
	}
	// An unknown policy named by the descriptor is OK (no limit).
	if resp := ask(desc("action", "nope", "member_id", "9")); resp.OverallCode != rlsv3.RateLimitResponse_OK {
		t.Fatalf("unknown policy: %v", resp)
	}
}

func TestRLSBadRequests(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, false)
	c := rlsClient(t, h)
	cases := []struct {
		name string
		req  *rlsv3.RateLimitRequest
		msg  string
	}{
		{"no domain", &rlsv3.RateLimitRequest{Descriptors: []*corev3.RateLimitDescriptor{desc("a", "b")}}, "sluice: domain must not be empty"},
		{"no descriptors", &rlsv3.RateLimitRequest{Domain: "edge"}, "sluice: at least one descriptor is required"},
		{"empty descriptor", &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*corev3.RateLimitDescriptor{{}}}, "sluice: a descriptor must have at least one entry"},
	}
	for _, tc := range cases {
		_, err := c.ShouldRateLimit(context.Background(), tc.req)
		if status.Code(err) != codes.InvalidArgument || status.Convert(err).Message() != tc.msg {
			t.Errorf("%s: err = %v, want InvalidArgument %q", tc.name, err, tc.msg)
		}
	}
}
