package redislimit_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
)

// BenchmarkDecisionKinds compares, in one run on one Redis, the cost per
// decision of a plain window decision (unbatched, so each is one script
// run like the others), an in-flight acquire and release, a reservation,
// a budget's admission (with the release of its lease) and a partial
// grant. Real Redis when SLUICE_REDIS_URL is set, else
// miniredis. Report the ratios to "window".
func BenchmarkDecisionKinds(b *testing.B) {
	be := miniBackend(b)
	if os.Getenv(redistest.EnvURL) != "" {
		be = realBackend(b)
	}
	s := be.store(b, redislimit.Options{DisableBatching: true})
	win := ratelimit.PerSecond(1 << 40)
	bucket := ratelimit.PerSecond(1 << 40).With(ratelimit.TokenBucket)
	ctx := context.Background()
	key := func(i int) string { return fmt.Sprintf("rate-limit:bench:kinds:{k:%d}", i&1023) }
	b.Run("window", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			s.Consume(ctx, ratelimit.Request{Key: key(i), Limit: win, Cost: 1})
		}
	})
	b.Run("in-flight", func(b *testing.B) {
		lim := ratelimit.InFlight{Max: 1 << 30, TTL: time.Minute}
		for i := 0; b.Loop(); i++ {
			a, _ := s.Acquire(ctx, ratelimit.AcquireRequest{Key: key(i), InFlight: lim, Requests: []ratelimit.Request{{Key: key(i), Limit: win, Cost: 1}}})
			s.Release(ctx, a.Lease)
		}
	})
	b.Run("wait", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			s.Reserve(ctx, time.Second, ratelimit.Request{Key: key(i), Limit: bucket, Cost: 1})
		}
	})
	b.Run("admit", func(b *testing.B) {
		// A budget's shape: a gate, a lease and a group of two buckets
		// with a fallback on the same counter.
		lim := ratelimit.InFlight{Max: 1 << 30, TTL: time.Minute}
		shared := bucket
		shared.Burst = 1 << 39
		for i := 0; b.Loop(); i++ {
			k := key(i)
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
			s.ConsumeAtMost(ctx, ratelimit.Request{Key: key(i), Limit: win, Cost: 4})
		}
	})
}
