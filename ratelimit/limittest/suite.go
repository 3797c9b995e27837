package limittest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// Harness is one store under test.
type Harness struct {
	// Store is the store under test.
	Store ratelimit.Store
	// Advance moves the store's notion of time forward by d (the store
	// must take its time from an injected clock in tests).
	Advance func(d time.Duration)
	// Second, when not nil, is a separate store instance (a second
	// "process") sharing Store's state.
	Second ratelimit.Store
}

// Run runs every conformance test; newHarness is called once per subtest
// and must return a fresh, empty keyspace. Subtests run one after another,
// so newHarness need not be safe for concurrent use.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"Exactness", testExactness},
		{"ExactnessMultiLimit", testExactnessMultiLimit},
		{"AllOrNothing", testAllOrNothing},
		{"DeniedDoNotConsume", testDeniedDoNotConsume},
		{"Cost", testCost},
		{"Peek", testPeek},
		{"CostExceedsQuota", testCostExceedsQuota},
		{"CostExceedsQuotaMultiLimit", testCostExceedsQuotaMultiLimit},
		{"FixedWindowExpiry", testFixedWindowExpiry},
		{"FixedWindowStartsAtFirstCall", testFixedWindowStartsAtFirstCall},
		{"FixedWindowPerKey", testFixedWindowPerKey},
		{"WindowNotStartedByDenialOrPeek", testWindowNotStartedByDenialOrPeek},
		{"QuotaOneNeverTwiceWithinWindow", testQuotaOneNeverTwiceWithinWindow},
		{"SlidingWindowExpiry", testSlidingWindowExpiry},
		{"SlidingWindowWeighting", testSlidingWindowWeighting},
		{"TokenBucketRefill", testTokenBucketRefill},
		{"TokenBucketBurst", testTokenBucketBurst},
		{"ResultFields", testResultFields},
		{"RetryAfterAccurate", testRetryAfterAccurate},
		{"SeparateCounters", testSeparateCounters},
		{"InvalidArguments", testInvalidArguments},
		{"CanceledContext", testCanceledContext},
		{"SecondProcess", testSecondProcess},
		{"Model", testModel},
		{"InFlightExactness", testInFlightExactness},
		{"InFlightLease", testInFlightLease},
		{"InFlightAllOrNothing", testInFlightAllOrNothing},
		{"PartialGrant", testPartialGrant},
		{"Reserve", testReserve},
		{"Reset", testReset},
		{"OverrideStore", testOverrideStore},
		{"AdmitAllOrNothing", testAdmitAllOrNothing},
		{"AdmitFallback", testAdmitFallback},
		{"AdmitExactness", testAdmitExactness},
		{"Charge", testCharge},
		{"CloseUntil", testCloseUntil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			if h.Store == nil || h.Advance == nil {
				t.Fatal("limittest: Harness.Store and Harness.Advance are required")
			}
			tc.fn(t, &suite{h: h})
		})
	}
}

// suite wraps a harness with helpers that fail the test on store errors.
type suite struct {
	h Harness
}

// second returns Second, or Store when there is no second instance.
func (s *suite) second() ratelimit.Store {
	if s.h.Second != nil {
		return s.h.Second
	}
	return s.h.Store
}

func (s *suite) consume(t *testing.T, reqs ...ratelimit.Request) ratelimit.Decision {
	t.Helper()
	return consumeOn(t, s.h.Store, reqs...)
}

func consumeOn(t *testing.T, st ratelimit.Store, reqs ...ratelimit.Request) ratelimit.Decision {
	t.Helper()
	d, err := st.Consume(context.Background(), reqs...)
	if err != nil {
		t.Fatalf("Consume(%v): %v", reqs, err)
	}
	if len(d.Results) != len(reqs) {
		t.Fatalf("Consume(%v): %d results, want %d", reqs, len(d.Results), len(reqs))
	}
	return d
}

// peek returns the single result of a cost-0 request.
func (s *suite) peek(t *testing.T, key string, l ratelimit.Limit) ratelimit.Result {
	t.Helper()
	d := s.consume(t, ratelimit.Request{Key: key, Limit: l})
	if !d.Allowed {
		t.Fatalf("peek %s %s: denied, want a peek always allowed", key, l)
	}
	return d.Results[0]
}

// align moves time to the start of a sliding window's sub-window of length
// w (a multiple of w since the Unix epoch). It learns where the store's
// clock stands from a sliding-window probe: with cost counted in the
// current sub-window, ResetAfter is W plus the time left in it. So it
// works whatever time the harness starts at.
func (s *suite) align(t *testing.T, w time.Duration) {
	t.Helper()
	probe := ratelimit.Request{Key: "limittest:align", Limit: ratelimit.Per(1<<40, w).With(ratelimit.SlidingWindow), Cost: 1}
	r := s.consume(t, probe).Results[0]
	if r.ResetAfter <= w || r.ResetAfter > 2*w {
		t.Fatalf("align: sliding-window ResetAfter = %v, want in (%v, %v]", r.ResetAfter, w, 2*w)
	}
	s.h.Advance(r.ResetAfter - w)
}

// algorithms lists one limit of quota q per window w for each algorithm.
func algorithms(q int64, w time.Duration) []ratelimit.Limit {
	return []ratelimit.Limit{
		ratelimit.Per(q, w),
		ratelimit.Per(q, w).With(ratelimit.SlidingWindow),
		ratelimit.Per(q, w).With(ratelimit.TokenBucket),
	}
}

func req(key string, l ratelimit.Limit, cost int64) ratelimit.Request {
	return ratelimit.Request{Key: key, Limit: l, Cost: cost}
}

// wantResult compares the fields of got with want and reports every
// difference.
func wantResult(t *testing.T, what string, got, want ratelimit.Result) {
	t.Helper()
	if diff := resultDiff(got, want); diff != "" {
		t.Errorf("%s: %s", what, diff)
	}
}

func resultDiff(got, want ratelimit.Result) string {
	if got == want {
		return ""
	}
	return fmt.Sprintf("got {Allowed:%v Used:%d Remaining:%d ResetAfter:%v RetryAfter:%v Limit:%v}, "+
		"want {Allowed:%v Used:%d Remaining:%d ResetAfter:%v RetryAfter:%v Limit:%v}",
		got.Allowed, got.Used, got.Remaining, got.ResetAfter, got.RetryAfter, got.Limit,
		want.Allowed, want.Used, want.Remaining, want.ResetAfter, want.RetryAfter, want.Limit)
}
