package limittest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// testExactness: 64 concurrent calls on a limit of 32 admit exactly 32,
// split across both instances when there are two.
func testExactness(t *testing.T, s *suite) {
	for _, l := range algorithms(32, time.Hour) {
		t.Run(l.Algorithm.String(), func(t *testing.T) {
			s.align(t, time.Hour)
			key := "exact:" + l.Algorithm.String()
			var allowed atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			errs := make(chan error, 64)
			for i := range 64 {
				st := s.h.Store
				if i%2 == 1 {
					st = s.second()
				}
				wg.Go(func() {
					<-start
					d, err := st.Consume(context.Background(), req(key, l, 1))
					if err != nil {
						errs <- err
						return
					}
					if d.Allowed {
						allowed.Add(1)
					}
				})
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("Consume: %v", err)
			}
			if got := allowed.Load(); got != 32 {
				t.Errorf("allowed %d of 64 concurrent calls on %s, want exactly 32", got, l)
			}
			if r := s.peek(t, key, l); r.Used != 32 || r.Remaining != 0 {
				t.Errorf("after the race: Used %d Remaining %d, want 32 and 0", r.Used, r.Remaining)
			}
		})
	}
}

// testExactnessMultiLimit: 64 concurrent two-limit decisions, in both
// orders across two keys, admit exactly 32 and leave both counters at 32:
// no denied call moves either counter, whatever the interleaving.
func testExactnessMultiLimit(t *testing.T, s *suite) {
	s.align(t, time.Hour)
	tight, loose := ratelimit.PerHour(32), ratelimit.PerHour(40).With(ratelimit.SlidingWindow)
	ab := []ratelimit.Request{req("multi:a", tight, 1), req("multi:b", loose, 1)}
	ba := []ratelimit.Request{ab[1], ab[0]}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 64 {
		st, reqs := s.h.Store, ab
		if i%2 == 1 {
			st, reqs = s.second(), ba
		}
		wg.Go(func() {
			<-start
			d, err := st.Consume(context.Background(), reqs...)
			if err != nil {
				t.Errorf("Consume: %v", err)
				return
			}
			if d.Allowed {
				allowed.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if got := allowed.Load(); got != 32 {
		t.Errorf("allowed %d of 64 concurrent two-limit calls, want exactly 32", got)
	}
	if a, b := s.peek(t, "multi:a", tight).Used, s.peek(t, "multi:b", loose).Used; a != 32 || b != 32 {
		t.Errorf("after the race: Used %d and %d, want 32 and 32 (denied calls move nothing)", a, b)
	}
}

// testAllOrNothing: a denying limit moves no counter, on one key and across
// keys.
func testAllOrNothing(t *testing.T, s *suite) {
	s.align(t, time.Hour)
	minute, hour := ratelimit.PerMinute(5), ratelimit.PerHour(2)
	both := []ratelimit.Request{req("aon", minute, 1), req("aon", hour, 1)}
	for i := range 2 {
		if d := s.consume(t, both...); !d.Allowed {
			t.Fatalf("call %d: denied, want allowed (%+v)", i+1, d)
		}
	}
	d := s.consume(t, both...)
	if d.Allowed || !d.Results[0].Allowed || d.Results[1].Allowed {
		t.Fatalf("third call: got Allowed=%v per-limit %v/%v, want denied by the hour limit alone",
			d.Allowed, d.Results[0].Allowed, d.Results[1].Allowed)
	}
	if d.RetryAfter != d.Results[1].RetryAfter || d.RetryAfter <= 0 {
		t.Errorf("Decision.RetryAfter = %v, want the hour limit's %v (> 0)", d.RetryAfter, d.Results[1].RetryAfter)
	}
	if d.Results[0].Used != 2 {
		t.Errorf("denied decision reports minute Used %d, want the unchanged 2", d.Results[0].Used)
	}
	if r := s.peek(t, "aon", minute); r.Used != 2 {
		t.Errorf("minute counter after a denied decision: Used %d, want 2 (nothing moves)", r.Used)
	}

	// Across keys: the full key denies, the fresh key must not count.
	lim := ratelimit.PerMinute(1)
	s.consume(t, req("aon:full", lim, 1))
	if d := s.consume(t, req("aon:fresh", lim, 1), req("aon:full", lim, 1)); d.Allowed {
		t.Fatal("decision over a full key: allowed, want denied")
	}
	if r := s.peek(t, "aon:fresh", lim); r.Used != 0 {
		t.Errorf("fresh key after a denied decision: Used %d, want 0", r.Used)
	}
}

// testDeniedDoNotConsume: denied calls leave the counter as it was, for
// every algorithm, also across the next window.
func testDeniedDoNotConsume(t *testing.T, s *suite) {
	for _, l := range algorithms(2, time.Second) {
		t.Run(l.Algorithm.String(), func(t *testing.T) {
			s.align(t, time.Second)
			key := "denied:" + l.Algorithm.String()
			s.consume(t, req(key, l, 1), req(key+":other", l, 1))
			s.consume(t, req(key, l, 1))
			for i := range 10 {
				if d := s.consume(t, req(key, l, 1)); d.Allowed {
					t.Fatalf("call %d over the limit allowed", i+3)
				}
			}
			if r := s.peek(t, key, l); r.Used != 2 {
				t.Errorf("Used %d after 10 denied calls, want 2", r.Used)
			}
			// One window later the denied calls must not weigh: a fixed
			// window and a token bucket are full again, a sliding window
			// still carries the 2 allowed calls, not 12.
			s.h.Advance(time.Second)
			want := int64(0)
			if l.Algorithm == ratelimit.SlidingWindow {
				want = 2
			}
			if r := s.peek(t, key, l); r.Used != want {
				t.Errorf("one window later: Used %d, want %d", r.Used, want)
			}
		})
	}
}

// testCost: cost 2 on a limit of 3 passes once, then is denied while cost 1
// still fits.
func testCost(t *testing.T, s *suite) {
	for _, l := range algorithms(3, time.Minute) {
		t.Run(l.Algorithm.String(), func(t *testing.T) {
			s.align(t, time.Minute)
			key := "cost:" + l.Algorithm.String()
			d := s.consume(t, req(key, l, 2))
			if !d.Allowed || d.Results[0].Used != 2 || d.Results[0].Remaining != 1 {
				t.Fatalf("first cost 2: %+v, want allowed with Used 2 Remaining 1", d.Results[0])
			}
			d = s.consume(t, req(key, l, 2))
			if d.Allowed || d.Results[0].Used != 2 || d.Results[0].Remaining != 1 || d.RetryAfter <= 0 {
				t.Fatalf("second cost 2: %+v, want denied with Used 2 Remaining 1 and a RetryAfter", d.Results[0])
			}
			if d := s.consume(t, req(key, l, 1)); !d.Allowed || d.Results[0].Remaining != 0 {
				t.Fatalf("cost 1 after: %+v, want allowed with Remaining 0", d.Results[0])
			}
		})
	}
}

// testPeek: cost 0 is allowed, moves nothing and reports Remaining.
func testPeek(t *testing.T, s *suite) {
	for _, l := range algorithms(5, time.Minute) {
		t.Run(l.Algorithm.String(), func(t *testing.T) {
			s.align(t, time.Minute)
			key := "peek:" + l.Algorithm.String()
			wantResult(t, "peek on a fresh key", s.peek(t, key, l),
				ratelimit.Result{Limit: l, Allowed: true, Remaining: 5})
			s.consume(t, req(key, l, 2))
			for i := range 3 {
				r := s.peek(t, key, l)
				if r.Used != 2 || r.Remaining != 3 || r.RetryAfter != 0 || r.ResetAfter <= 0 {
					t.Errorf("peek %d: %+v, want Used 2 Remaining 3 RetryAfter 0 and a ResetAfter", i, r)
				}
			}
			s.consume(t, req(key, l, 3))
			if r := s.peek(t, key, l); r.Used != 5 || r.Remaining != 0 {
				t.Errorf("peek when full: %+v, want allowed with Used 5 Remaining 0", r)
			}
		})
	}
}

// testSeparateCounters: keys, windows and algorithms count apart; limits
// differing only in quota share a counter.
func testSeparateCounters(t *testing.T, s *suite) {
	s.align(t, time.Hour)
	one := ratelimit.PerMinute(1)
	s.consume(t, req("sep:a", one, 1))
	if d := s.consume(t, req("sep:b", one, 1)); !d.Allowed {
		t.Error("key sep:b denied after sep:a used its limit, want separate counters")
	}
	others := []ratelimit.Limit{ratelimit.PerHour(1), one.With(ratelimit.SlidingWindow), one.With(ratelimit.TokenBucket)}
	for _, l := range others {
		if d := s.consume(t, req("sep:a", l, 1)); !d.Allowed {
			t.Errorf("limit %s (ID %s) on sep:a denied, want its own counter apart from %s", l, l.ID(), one.ID())
		}
	}
	if d := s.consume(t, req("sep:a", ratelimit.PerMinute(2), 1)); !d.Allowed || d.Results[0].Used != 2 {
		t.Errorf("PerMinute(2) on sep:a: %+v, want allowed with Used 2 (same ID as PerMinute(1), shared counter)", d.Results[0])
	}
}

// testCanceledContext: a done context returns its error and moves nothing.
func testCanceledContext(t *testing.T, s *suite) {
	l := ratelimit.PerMinute(5)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, st := range []ratelimit.Store{s.h.Store, s.second()} {
		if _, err := st.Consume(ctx, req("ctx", l, 1)); !errors.Is(err, context.Canceled) {
			t.Errorf("Consume with a canceled context: err = %v, want one matching context.Canceled", err)
		}
	}
	if r := s.peek(t, "ctx", l); r.Used != 0 {
		t.Errorf("after canceled calls: Used %d, want 0", r.Used)
	}
}

// testSecondProcess: two instances see each other's counts.
func testSecondProcess(t *testing.T, s *suite) {
	if s.h.Second == nil {
		t.Skip("limittest: no second instance in this harness")
	}
	for _, l := range algorithms(3, time.Minute) {
		key := "second:" + l.Algorithm.String()
		consumeOn(t, s.h.Store, req(key, l, 2))
		if d := consumeOn(t, s.h.Second, req(key, l, 2)); d.Allowed || d.Results[0].Used != 2 {
			t.Errorf("%s: second instance: %+v, want denied with Used 2 counted by the first", l, d.Results[0])
		}
		if d := consumeOn(t, s.h.Second, req(key, l, 1)); !d.Allowed {
			t.Errorf("%s: second instance cost 1: denied, want allowed", l)
		}
		if r := s.peek(t, key, l); r.Used != 3 {
			t.Errorf("%s: first instance sees Used %d, want 3", l, r.Used)
		}
	}
}
