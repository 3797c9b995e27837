package limittest

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

const us1 = time.Microsecond

// testFixedWindowExpiry: the count resets exactly when the window that
// the first counted call started ends, which is where RetryAfter and
// ResetAfter point; the next counted call starts a new window.
func testFixedWindowExpiry(t *testing.T, s *suite) {
	l := ratelimit.PerSecond(3)
	s.align(t, time.Second)
	s.h.Advance(700 * time.Millisecond) // a clock boundary would be 300ms away
	d := s.consume(t, req("fixed", l, 3))
	wantResult(t, "first call", d.Results[0], ratelimit.Result{
		Limit: l, Allowed: true, Used: 3, ResetAfter: time.Second,
	})
	s.h.Advance(400 * time.Millisecond)
	d = s.consume(t, req("fixed", l, 1))
	wantResult(t, "over the limit 400ms into the window", d.Results[0], ratelimit.Result{
		Limit: l, Used: 3, ResetAfter: 600 * time.Millisecond, RetryAfter: 600 * time.Millisecond,
	})
	s.h.Advance(600*time.Millisecond - us1)
	if d := s.consume(t, req("fixed", l, 1)); d.Allowed {
		t.Fatal("1µs before the window ends: allowed, want denied")
	}
	s.h.Advance(us1)
	wantResult(t, "peek when the window has ended", s.peek(t, "fixed", l), ratelimit.Result{
		Limit: l, Allowed: true, Remaining: 3,
	})
	d = s.consume(t, req("fixed", l, 1))
	wantResult(t, "when the window has ended", d.Results[0], ratelimit.Result{
		Limit: l, Allowed: true, Used: 1, Remaining: 2, ResetAfter: time.Second,
	})
}

// testSlidingWindowExpiry: the previous sub-window's count fades out over
// the following one and is gone one sub-window later.
func testSlidingWindowExpiry(t *testing.T, s *suite) {
	l := ratelimit.PerSecond(10).With(ratelimit.SlidingWindow)
	s.align(t, time.Second)
	s.consume(t, req("slide", l, 10))
	s.h.Advance(time.Second)
	d := s.consume(t, req("slide", l, 1))
	wantResult(t, "start of the next window", d.Results[0], ratelimit.Result{
		Limit: l, Used: 10, ResetAfter: time.Second, RetryAfter: 100 * time.Millisecond,
	})
	s.h.Advance(250 * time.Millisecond) // 10 × 0.75 = 7.5 → 8
	if d := s.consume(t, req("slide", l, 3)); d.Allowed || d.Results[0].Used != 8 {
		t.Fatalf("cost 3 a quarter into the next window: %+v, want denied with Used 8 (7.5 rounded up)", d.Results[0])
	}
	d = s.consume(t, req("slide", l, 2))
	wantResult(t, "a quarter into the next window", d.Results[0], ratelimit.Result{
		Limit: l, Allowed: true, Used: 10, ResetAfter: 1750 * time.Millisecond,
	})
	s.h.Advance(750 * time.Millisecond)
	if r := s.peek(t, "slide", l); r.Used != 2 {
		t.Errorf("two windows on: Used %d, want the 2 of the window before", r.Used)
	}
	s.h.Advance(time.Second)
	wantResult(t, "three windows on", s.peek(t, "slide", l), ratelimit.Result{Limit: l, Allowed: true, Remaining: 10})
}

// testSlidingWindowWeighting: the estimate is ceil(prev × remaining
// fraction) + current, at several points of the window: rounded up, never
// in the caller's favour.
func testSlidingWindowWeighting(t *testing.T, s *suite) {
	l := ratelimit.PerSecond(100).With(ratelimit.SlidingWindow)
	s.align(t, time.Second)
	s.consume(t, req("weight", l, 30))
	s.h.Advance(time.Second)
	s.consume(t, req("weight", l, 4))
	steps := []struct {
		advance time.Duration
		want    int64
	}{
		{0, 30 + 4},
		{100 * time.Millisecond, 27 + 4},    // 30 × 0.9 = 27 exactly
		{233 * time.Millisecond, 21 + 4},    // 30 × 0.667 = 20.01
		{1 * time.Millisecond, 20 + 4},      // 30 × 0.666 = 19.98
		{500 * time.Millisecond, 5 + 4},     // 30 × 0.166 = 4.98
		{166*time.Millisecond - us1, 1 + 4}, // 30 × 0.000001 = 0.00003
		{us1, 4},                            // next window: the 4 become the previous window, weight 1
		{500 * time.Millisecond, 2},
		{time.Millisecond, 2}, // 4 × 0.499 = 1.996
		{499 * time.Millisecond, 0},
	}
	for i, st := range steps {
		s.h.Advance(st.advance)
		if r := s.peek(t, "weight", l); r.Used != st.want || r.Remaining != 100-st.want {
			t.Errorf("step %d: Used %d Remaining %d, want %d and %d", i, r.Used, r.Remaining, st.want, 100-st.want)
		}
	}
}

// testTokenBucketRefill: one unit per emission interval, never above the
// capacity.
func testTokenBucketRefill(t *testing.T, s *suite) {
	l := ratelimit.PerSecond(10).WithBurst(5) // T = 100ms, capacity 5
	s.consume(t, req("refill", l, 5))
	d := s.consume(t, req("refill", l, 1))
	wantResult(t, "empty bucket", d.Results[0], ratelimit.Result{
		Limit: l, Used: 5, ResetAfter: 500 * time.Millisecond, RetryAfter: 100 * time.Millisecond,
	})
	s.h.Advance(100*time.Millisecond - us1)
	if d := s.consume(t, req("refill", l, 1)); d.Allowed {
		t.Fatal("1µs before the refill: allowed, want denied")
	}
	s.h.Advance(us1)
	d = s.consume(t, req("refill", l, 1))
	wantResult(t, "after one emission interval", d.Results[0], ratelimit.Result{
		Limit: l, Allowed: true, Used: 5, ResetAfter: 500 * time.Millisecond,
	})
	s.h.Advance(250 * time.Millisecond) // 2.5 units back
	wantResult(t, "2.5 intervals later", s.peek(t, "refill", l), ratelimit.Result{
		Limit: l, Allowed: true, Used: 3, Remaining: 2, ResetAfter: 250 * time.Millisecond,
	})
	s.h.Advance(time.Hour)
	wantResult(t, "long idle", s.peek(t, "refill", l), ratelimit.Result{Limit: l, Allowed: true, Remaining: 5})
	_, err := s.h.Store.Consume(t.Context(), req("refill", l, 6))
	checkCostError(t, "6 at once after a long idle, capacity 5", err, 6, l)
}

// testTokenBucketBurst: capacity is Burst, or Quota without it, above or
// below the quota; the rate is Quota per Window either way.
func testTokenBucketBurst(t *testing.T, s *suite) {
	tests := []struct {
		limit ratelimit.Limit
		burst int64
		every time.Duration
	}{
		{ratelimit.PerMinute(6).With(ratelimit.TokenBucket), 6, 10 * time.Second},
		{ratelimit.PerSecond(1).WithBurst(3), 3, time.Second},
		{ratelimit.PerSecond(100).WithBurst(1), 1, 10 * time.Millisecond},
		{ratelimit.Per(3, time.Second).With(ratelimit.TokenBucket), 3, 333334 * us1}, // T rounded up
	}
	for _, tc := range tests {
		t.Run(tc.limit.String(), func(t *testing.T) {
			key := "burst:" + tc.limit.String()
			for i := range tc.burst {
				if d := s.consume(t, req(key, tc.limit, 1)); !d.Allowed {
					t.Fatalf("call %d of a burst of %d denied", i+1, tc.burst)
				}
			}
			d := s.consume(t, req(key, tc.limit, 1))
			if d.Allowed || d.RetryAfter != tc.every {
				t.Fatalf("call after the burst: allowed=%v RetryAfter %v, want denied with %v", d.Allowed, d.RetryAfter, tc.every)
			}
			s.h.Advance(tc.every)
			if d := s.consume(t, req(key, tc.limit, 1)); !d.Allowed {
				t.Fatalf("after one interval (%v): denied, want allowed", tc.every)
			}
		})
	}
}
