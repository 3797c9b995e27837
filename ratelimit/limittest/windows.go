package limittest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// testFixedWindowStartsAtFirstCall: 1 per second, called 100ms before a
// clock boundary and again 200ms later, denies the second call; the window
// the first call started ends exactly one second after it.
func testFixedWindowStartsAtFirstCall(t *testing.T, s *suite) {
	l := ratelimit.PerSecond(1)
	s.align(t, time.Second)
	s.h.Advance(900 * time.Millisecond)
	d := s.consume(t, req("first", l, 1))
	wantResult(t, "first call at .900", d.Results[0], ratelimit.Result{
		Limit: l, Allowed: true, Used: 1, ResetAfter: time.Second,
	})
	s.h.Advance(200 * time.Millisecond) // across the clock boundary
	d = s.consume(t, req("first", l, 1))
	wantResult(t, "second call 200ms later", d.Results[0], ratelimit.Result{
		Limit: l, Used: 1, ResetAfter: 800 * time.Millisecond, RetryAfter: 800 * time.Millisecond,
	})
	if d.RetryAfter != 800*time.Millisecond {
		t.Errorf("Decision.RetryAfter = %v, want 800ms", d.RetryAfter)
	}
	s.h.Advance(800*time.Millisecond - us1)
	if d := s.consume(t, req("first", l, 1)); d.Allowed {
		t.Fatal("1µs before a second has passed since the first call: allowed, want denied")
	}
	s.h.Advance(us1)
	d = s.consume(t, req("first", l, 1))
	wantResult(t, "one second after the first call", d.Results[0], ratelimit.Result{
		Limit: l, Allowed: true, Used: 1, ResetAfter: time.Second,
	})

	// A minute window behaves the same way: two calls a few ms apart
	// across a minute boundary are not both admitted.
	m := ratelimit.PerMinute(1)
	s.align(t, time.Minute)
	s.h.Advance(time.Minute - 2*time.Millisecond)
	s.consume(t, req("minute", m, 1))
	s.h.Advance(5 * time.Millisecond)
	d = s.consume(t, req("minute", m, 1))
	if d.Allowed || d.RetryAfter != time.Minute-5*time.Millisecond {
		t.Errorf("second call 5ms later across a minute boundary: %+v, want denied with RetryAfter 59.995s", d.Results[0])
	}
}

// testFixedWindowPerKey: every counter has its own window, started by its
// own first counted call; limits on one key with different windows too.
func testFixedWindowPerKey(t *testing.T, s *suite) {
	l := ratelimit.Per(2, 10*time.Second)
	s.consume(t, req("perkey:a", l, 1))
	s.h.Advance(3 * time.Second)
	s.consume(t, req("perkey:b", l, 2))
	s.consume(t, req("perkey:a", ratelimit.PerMinute(5), 1))
	s.h.Advance(4 * time.Second)
	steps := []struct {
		key        string
		limit      ratelimit.Limit
		wantUsed   int64
		wantResetA time.Duration
	}{
		{"perkey:a", l, 1, 3 * time.Second},
		{"perkey:b", l, 2, 6 * time.Second},
		{"perkey:a", ratelimit.PerMinute(5), 1, 56 * time.Second},
	}
	for _, st := range steps {
		r := s.peek(t, st.key, st.limit)
		if r.Used != st.wantUsed || r.ResetAfter != st.wantResetA {
			t.Errorf("%s %s 7s on: Used %d ResetAfter %v, want %d and %v", st.key, st.limit, r.Used, r.ResetAfter, st.wantUsed, st.wantResetA)
		}
	}
	s.h.Advance(3 * time.Second) // a's window is over, b's is not
	if d := s.consume(t, req("perkey:a", l, 2)); !d.Allowed || d.Results[0].ResetAfter != 10*time.Second {
		t.Errorf("a after its window: %+v, want allowed in a new 10s window", d.Results[0])
	}
	if d := s.consume(t, req("perkey:b", l, 1)); d.Allowed || d.RetryAfter != 3*time.Second {
		t.Errorf("b inside its window: %+v, want denied with RetryAfter 3s", d.Results[0])
	}
}

// testWindowNotStartedByDenialOrPeek: a window starts only with a counted
// call. A peek does not start one, a denied call neither starts nor
// extends one, and in a denied decision the limits that would have
// admitted their request start nothing either.
func testWindowNotStartedByDenialOrPeek(t *testing.T, s *suite) {
	l := ratelimit.PerSecond(1)
	s.peek(t, "nostart:peek", l)
	s.h.Advance(600 * time.Millisecond)
	if d := s.consume(t, req("nostart:peek", l, 1)); d.Results[0].ResetAfter != time.Second {
		t.Errorf("first counted call 600ms after a peek: ResetAfter %v, want 1s (the peek started nothing)", d.Results[0].ResetAfter)
	}

	s.consume(t, req("nostart:deny", l, 1))
	for range 9 { // denied calls all through the window
		s.h.Advance(100 * time.Millisecond)
		s.consume(t, req("nostart:deny", l, 1))
	}
	s.h.Advance(100 * time.Millisecond)
	if d := s.consume(t, req("nostart:deny", l, 1)); !d.Allowed {
		t.Errorf("one second after the admitted call, after denied calls: %+v, want allowed (denials do not extend the window)", d.Results[0])
	}

	// All or nothing: the fresh limit's window must not start when the
	// other limit denies.
	fresh, full := ratelimit.PerMinute(5), ratelimit.PerHour(1)
	s.consume(t, req("nostart:full", full, 1))
	both := []ratelimit.Request{req("nostart:fresh", fresh, 1), req("nostart:full", full, 1)}
	if d := s.consume(t, both...); d.Allowed {
		t.Fatal("decision over a full limit: allowed, want denied")
	}
	s.h.Advance(30 * time.Second)
	wantResult(t, "fresh limit 30s after a denied decision", s.peek(t, "nostart:fresh", fresh),
		ratelimit.Result{Limit: fresh, Allowed: true, Remaining: 5})
	d := s.consume(t, req("nostart:fresh", fresh, 1))
	wantResult(t, "its first counted call", d.Results[0], ratelimit.Result{
		Limit: fresh, Allowed: true, Used: 1, Remaining: 4, ResetAfter: time.Minute,
	})
}

// testQuotaOneNeverTwiceWithinWindow: with quota 1 a call 200ms after an
// admitted one is denied wherever the first call falls, for the fixed and
// the sliding window (FastGPT's 1-per-second money policies exist to stop
// double submits).
func testQuotaOneNeverTwiceWithinWindow(t *testing.T, s *suite) {
	offsets := []time.Duration{0, us1, 100 * time.Millisecond, 799 * time.Millisecond,
		800 * time.Millisecond, 900 * time.Millisecond, time.Second - us1}
	for _, l := range []ratelimit.Limit{ratelimit.PerSecond(1), ratelimit.PerSecond(1).With(ratelimit.SlidingWindow)} {
		for i, off := range offsets {
			key := fmt.Sprintf("once:%d", i)
			s.align(t, time.Second)
			s.h.Advance(off)
			if d := s.consume(t, req(key, l, 1)); !d.Allowed {
				t.Fatalf("%s: first call %v into a second: denied, want allowed", l, off)
			}
			s.h.Advance(200 * time.Millisecond)
			if d := s.consume(t, req(key, l, 1)); d.Allowed {
				t.Errorf("%s: first call %v into a second, second call 200ms later: allowed, want denied", l, off)
			}
			s.h.Advance(2 * time.Second) // leave the next round a fresh start
		}
	}
}

// testCostExceedsQuota: a cost above the capacity can never be admitted,
// so it is refused with ErrCostExceedsQuota (and ErrInvalidArgument), not
// denied with a RetryAfter a client would wait for forever; nothing moves.
// The capacity itself is fine.
func testCostExceedsQuota(t *testing.T, s *suite) {
	limits := append(algorithms(3, time.Minute), ratelimit.PerMinute(3).WithBurst(5), ratelimit.PerMinute(9).WithBurst(2))
	for _, l := range limits {
		t.Run(l.String(), func(t *testing.T) {
			key := "over:" + l.String()
			c := l.Capacity()
			for i, st := range []ratelimit.Store{s.h.Store, s.second()} {
				_, err := st.Consume(t.Context(), req(key+":other", l, 1), req(key, l, c+1))
				checkCostError(t, fmt.Sprintf("instance %d, cost %d on capacity %d", i+1, c+1, c), err, c+1, l)
			}
			if r := s.peek(t, key+":other", l); r.Used != 0 {
				t.Errorf("request beside the refused one: Used %d, want 0 (nothing moves)", r.Used)
			}
			if d := s.consume(t, req(key, l, c)); !d.Allowed {
				t.Errorf("cost %d (the capacity) on a fresh key: denied, want allowed", c)
			}
		})
	}
}

// testCostExceedsQuotaMultiLimit: all or nothing, so a cost above the
// capacity of any one limit of the call makes the whole call impossible,
// even when the other limits have room for it.
func testCostExceedsQuotaMultiLimit(t *testing.T, s *suite) {
	small, large := ratelimit.PerSecond(2), ratelimit.PerHour(100).With(ratelimit.SlidingWindow)
	_, err := s.h.Store.Consume(t.Context(), req("multi-over", large, 3), req("multi-over", small, 3))
	checkCostError(t, "cost 3 on limits of 100 and 2", err, 3, small)
	if r := s.peek(t, "multi-over", large); r.Used != 0 {
		t.Errorf("the larger limit after the refusal: Used %d, want 0", r.Used)
	}
	if d := s.consume(t, req("multi-over", large, 2), req("multi-over", small, 2)); !d.Allowed {
		t.Errorf("cost 2 on limits of 100 and 2: %+v, want allowed", d)
	}
}

func checkCostError(t *testing.T, what string, err error, cost int64, l ratelimit.Limit) {
	t.Helper()
	var ce *ratelimit.CostExceedsQuotaError
	switch {
	case !errors.Is(err, ratelimit.ErrCostExceedsQuota) || !errors.Is(err, ratelimit.ErrInvalidArgument):
		t.Errorf("%s: err = %v, want one matching ErrCostExceedsQuota and ErrInvalidArgument", what, err)
	case !errors.As(err, &ce):
		t.Errorf("%s: err = %T, want a *ratelimit.CostExceedsQuotaError", what, err)
	case ce.Cost != cost || ce.Limit != l:
		t.Errorf("%s: error names cost %d and limit %v, want %d and %v", what, ce.Cost, ce.Limit, cost, l)
	}
}
