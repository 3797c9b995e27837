package limittest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// testInvalidArguments: bad requests return ErrInvalidArgument and do not
// count the valid requests beside them.
func testInvalidArguments(t *testing.T, s *suite) {
	l := ratelimit.PerMinute(5)
	valid := req("valid", l, 1)
	tests := []struct {
		name string
		reqs []ratelimit.Request
	}{
		{"no requests", nil},
		{"quota 0", []ratelimit.Request{valid, req("k", ratelimit.PerMinute(0), 1)}},
		{"negative quota", []ratelimit.Request{valid, req("k", ratelimit.PerMinute(-1), 1)}},
		{"negative cost", []ratelimit.Request{valid, req("k", l, -1)}},
		{"empty key", []ratelimit.Request{valid, req("", l, 1)}},
		{"window 0", []ratelimit.Request{valid, req("k", ratelimit.Per(1, 0), 1)}},
		{"window under 1ms", []ratelimit.Request{valid, req("k", ratelimit.Per(1, 999*time.Microsecond), 1)}},
		{"window not whole ms", []ratelimit.Request{valid, req("k", ratelimit.Per(1, 1500*time.Microsecond), 1)}},
		{"negative burst", []ratelimit.Request{valid, req("k", ratelimit.Limit{Quota: 1, Window: time.Second, Algorithm: ratelimit.TokenBucket, Burst: -1}, 1)}},
		{"unknown algorithm", []ratelimit.Request{valid, req("k", ratelimit.PerMinute(1).With(9), 1)}},
		{"same key and limit twice", []ratelimit.Request{valid, req("valid", ratelimit.PerMinute(9), 1)}},
	}
	for _, tc := range tests {
		for i, st := range []ratelimit.Store{s.h.Store, s.second()} {
			_, err := st.Consume(t.Context(), tc.reqs...)
			if !errors.Is(err, ratelimit.ErrInvalidArgument) {
				t.Errorf("%s (instance %d): err = %v, want one matching ratelimit.ErrInvalidArgument", tc.name, i+1, err)
			}
		}
	}
	if r := s.peek(t, "valid", l); r.Used != 0 {
		t.Errorf("valid request beside invalid ones: Used %d, want 0 (store not touched)", r.Used)
	}
}

// testResultFields checks the relations between Result fields that hold
// for every algorithm over a varied run.
func testResultFields(t *testing.T, s *suite) {
	limits := append(algorithms(7, time.Second), ratelimit.PerSecond(4).WithBurst(9))
	rng := rand.New(rand.NewPCG(1, 2))
	for _, l := range limits {
		t.Run(l.String(), func(t *testing.T) {
			key := "fields:" + l.String()
			for i := range 200 {
				s.h.Advance(time.Duration(rng.IntN(300)) * time.Millisecond)
				cost := int64(rng.IntN(5))
				d := s.consume(t, req(key, l, cost))
				if msg := checkFields(l, cost, d); msg != "" {
					t.Fatalf("call %d (cost %d): %s: %+v", i, cost, msg, d)
				}
			}
		})
	}
}

func checkFields(l ratelimit.Limit, cost int64, d ratelimit.Decision) string {
	r := d.Results[0]
	bound := map[ratelimit.Algorithm]time.Duration{
		ratelimit.FixedWindow:   l.Window,
		ratelimit.SlidingWindow: 2 * l.Window,
		ratelimit.TokenBucket:   time.Duration(l.Capacity()) * dur(emission(l)),
	}[l.Algorithm]
	switch {
	case d.Allowed != r.Allowed || d.RetryAfter != r.RetryAfter:
		return "Decision disagrees with its only Result"
	case r.Limit != l:
		return "Result.Limit is not the request's limit"
	case r.Used < 0 || r.Remaining < 0:
		return "negative Used or Remaining"
	case r.Remaining != max(0, l.Capacity()-r.Used):
		return "Remaining is not Capacity - Used"
	case r.Allowed && r.RetryAfter != 0:
		return "allowed with a RetryAfter"
	case !r.Allowed && cost <= l.Capacity() && r.RetryAfter <= 0:
		return "denied without a RetryAfter"
	case r.RetryAfter > r.ResetAfter:
		return "RetryAfter beyond ResetAfter"
	case r.ResetAfter < 0 || r.ResetAfter > bound:
		return fmt.Sprintf("ResetAfter outside [0, %v]", bound)
	case r.Used > 0 && r.ResetAfter == 0:
		return "Used without a ResetAfter"
	case r.ResetAfter%time.Microsecond != 0 || r.RetryAfter%time.Microsecond != 0:
		return "durations not whole microseconds"
	}
	return ""
}

// testRetryAfterAccurate: after waiting RetryAfter the same request is
// allowed, and not a microsecond earlier.
func testRetryAfterAccurate(t *testing.T, s *suite) {
	limits := append(algorithms(7, time.Second), ratelimit.Per(3, time.Second).WithBurst(4))
	rng := rand.New(rand.NewPCG(3, 4))
	for _, l := range limits {
		t.Run(l.String(), func(t *testing.T) {
			key := "retry:" + l.String()
			for round := range 40 {
				cost := 1 + int64(rng.IntN(3))
				s.h.Advance(time.Duration(rng.IntN(700)) * time.Millisecond)
				d := s.consume(t, req(key, l, cost))
				for d.Allowed {
					d = s.consume(t, req(key, l, cost))
				}
				wait := d.RetryAfter
				s.h.Advance(wait - us1)
				if d := s.consume(t, req(key, l, cost)); d.Allowed {
					t.Fatalf("round %d: cost %d allowed 1µs before RetryAfter %v", round, cost, wait)
				}
				s.h.Advance(us1)
				if d := s.consume(t, req(key, l, cost)); !d.Allowed {
					t.Fatalf("round %d: cost %d denied after waiting RetryAfter %v: %+v", round, cost, wait, d.Results[0])
				}
			}
		})
	}
}

// testModel replays random traffic on several keys and limits, both
// instances taking turns, and compares every decision with the reference
// model of the package documentation.
func testModel(t *testing.T, s *suite) {
	const origin = 30 * time.Second // a multiple of every window below
	limits := []ratelimit.Limit{
		ratelimit.PerSecond(5),
		ratelimit.Per(7, 1500*time.Millisecond),
		ratelimit.PerSecond(6).With(ratelimit.SlidingWindow),
		ratelimit.Per(100, 250*time.Millisecond).With(ratelimit.SlidingWindow),
		ratelimit.Per(3, time.Second).With(ratelimit.TokenBucket),
		ratelimit.Per(7, 2*time.Second).WithBurst(2),
		ratelimit.Per(5, 1500*time.Millisecond).WithBurst(9),
	}
	keys := []string{"model:a", "model:b", "model:{c}"}
	rng := rand.New(rand.NewPCG(5, 6))
	s.align(t, origin)
	m := newModel()
	var now int64
	stores := []ratelimit.Store{s.h.Store, s.second()}
	for op := range 2000 {
		adv := randomAdvance(rng)
		s.h.Advance(adv)
		now += us(adv)
		reqs := randomRequests(rng, keys, limits)
		if overCapacity(reqs) {
			_, err := stores[op%2].Consume(t.Context(), reqs...)
			if !errors.Is(err, ratelimit.ErrCostExceedsQuota) {
				t.Fatalf("op %d, %v: err = %v, want one matching ratelimit.ErrCostExceedsQuota", op, reqs, err)
			}
			continue
		}
		got := consumeOn(t, stores[op%2], reqs...)
		want := m.consume(now, reqs...)
		if msg := decisionDiff(got, want); msg != "" {
			t.Fatalf("op %d at +%v since a %v boundary, %v: %s", op, dur(now), origin, reqs, msg)
		}
	}
}

// overCapacity reports whether a request of reqs costs more than its
// limit's capacity, which makes the whole call an error.
func overCapacity(reqs []ratelimit.Request) bool {
	for _, r := range reqs {
		if r.Cost > r.Limit.Capacity() {
			return true
		}
	}
	return false
}

func randomAdvance(rng *rand.Rand) time.Duration {
	switch rng.IntN(6) {
	case 0:
		return 0
	case 1:
		return time.Duration(1+rng.IntN(1000)) * us1
	case 2, 3:
		return time.Duration(rng.IntN(400)) * time.Millisecond
	case 4:
		return time.Duration(rng.IntN(3000)) * time.Millisecond
	}
	return time.Duration(rng.Int64N(1_000_000)) * us1
}

func randomRequests(rng *rand.Rand, keys []string, limits []ratelimit.Limit) []ratelimit.Request {
	n := 1 + rng.IntN(3)
	var reqs []ratelimit.Request
	seen := map[counterID]bool{}
	for range n {
		k, l := keys[rng.IntN(len(keys))], limits[rng.IntN(len(limits))]
		if id := (counterID{k, l.ID()}); !seen[id] {
			seen[id] = true
			reqs = append(reqs, req(k, l, int64(rng.IntN(4))))
		}
	}
	return reqs
}

func decisionDiff(got, want ratelimit.Decision) string {
	if got.Allowed != want.Allowed || got.RetryAfter != want.RetryAfter {
		return fmt.Sprintf("got Allowed=%v RetryAfter=%v, want Allowed=%v RetryAfter=%v",
			got.Allowed, got.RetryAfter, want.Allowed, want.RetryAfter)
	}
	for i := range want.Results {
		if diff := resultDiff(got.Results[i], want.Results[i]); diff != "" {
			return fmt.Sprintf("result %d: %s", i, diff)
		}
	}
	return ""
}
