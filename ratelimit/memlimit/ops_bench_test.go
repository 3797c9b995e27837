package memlimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

// BenchmarkDecisionKinds compares, in one run, the cost per decision of a
// plain window decision, an in-flight acquire and release (with the same
// window limit in the decision), a reservation (a token bucket that never
// needs a delay, so the wait's bookkeeping is measured, not a sleep), a
// budget's admission (with the release of its lease) and a partial grant,
// over 1024 keys. Report the ratios to "window".
func BenchmarkDecisionKinds(b *testing.B) {
	keys := benchKeys(1024)
	win := ratelimit.PerSecond(1 << 40)
	bucket := ratelimit.PerSecond(1 << 40).With(ratelimit.TokenBucket)
	ctx := context.Background()
	s := memlimit.New(memlimit.Options{})
	defer s.Close()
	b.Run("window", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			s.Consume(ctx, ratelimit.Request{Key: keys[i&1023], Limit: win, Cost: 1})
		}
	})
	b.Run("in-flight", func(b *testing.B) {
		lim := ratelimit.InFlight{Max: 1 << 30, TTL: time.Minute}
		for i := 0; b.Loop(); i++ {
			k := keys[i&1023]
			a, _ := s.Acquire(ctx, ratelimit.AcquireRequest{Key: k, InFlight: lim, Requests: []ratelimit.Request{{Key: k, Limit: win, Cost: 1}}})
			s.Release(ctx, a.Lease)
		}
	})
	b.Run("wait", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			s.Reserve(ctx, time.Second, ratelimit.Request{Key: keys[i&1023], Limit: bucket, Cost: 1})
		}
	})
	b.Run("admit", func(b *testing.B) {
		// A budget's shape: a gate, a lease and a group of two buckets
		// with a fallback on the same counter.
		lim := ratelimit.InFlight{Max: 1 << 30, TTL: time.Minute}
		shared := bucket
		shared.Burst = 1 << 39
		for i := 0; b.Loop(); i++ {
			k := keys[i&1023]
			a, _ := s.Admit(ctx, ratelimit.AdmitRequest{
				Gates:  []string{k},
				Leases: []ratelimit.LeaseRequest{{Key: k, InFlight: lim}},
				Groups: []ratelimit.RequestGroup{{
					Requests: []ratelimit.Request{{Key: k, Limit: bucket, Cost: 1}, {Key: k + ":t", Limit: bucket, Cost: 1}},
					Fallback: []ratelimit.Request{{Key: k, Limit: shared, Cost: 1}},
				}},
			})
			s.Release(ctx, a.Leases[0])
		}
	})
	b.Run("at-most", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			s.ConsumeAtMost(ctx, ratelimit.Request{Key: keys[i&1023], Limit: win, Cost: 4})
		}
	})
}
