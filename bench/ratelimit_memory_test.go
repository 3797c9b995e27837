package bench

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/sethvargo/go-limiter/memorystore"
	"golang.org/x/time/rate"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

// memLib is one in-process limiter under test: take counts one unit
// against key and reports whether it was admitted. Limits are high enough
// that every call is admitted.
type memLib struct {
	name string
	open func(b *testing.B) func(ctx context.Context, key string) bool
}

// memlimit runs through the ratelimit.Store interface (Consume, which must
// return a Decision and so allocates its Results slice) and through
// ConsumeOne, its single-request form that returns the Result by value.
var memLibs = []memLib{
	{"memlimit-fixed", openMemlimit(ratelimit.PerSecond(1<<40), false)},
	{"memlimit-gcra", openMemlimit(ratelimit.Per(1<<30, time.Second).With(ratelimit.TokenBucket), false)},
	{"memlimit-fixed-one", openMemlimit(ratelimit.PerSecond(1<<40), true)},
	{"memlimit-gcra-one", openMemlimit(ratelimit.Per(1<<30, time.Second).With(ratelimit.TokenBucket), true)},
	{"go-limiter", openGoLimiter},
	{"x-time-rate-map", openRateMap},
}

func openMemlimit(l ratelimit.Limit, one bool) func(*testing.B) func(context.Context, string) bool {
	return func(b *testing.B) func(context.Context, string) bool {
		s := memlimit.New(memlimit.Options{})
		b.Cleanup(func() { _ = s.Close() })
		if one {
			return func(ctx context.Context, key string) bool {
				r, err := s.ConsumeOne(ctx, ratelimit.Request{Key: key, Limit: l, Cost: 1})
				return err == nil && r.Allowed
			}
		}
		return func(ctx context.Context, key string) bool {
			d, err := s.Consume(ctx, ratelimit.Request{Key: key, Limit: l, Cost: 1})
			return err == nil && d.Allowed
		}
	}
}

func openGoLimiter(b *testing.B) func(context.Context, string) bool {
	s, err := memorystore.New(&memorystore.Config{Tokens: 1 << 40, Interval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close(context.Background()) })
	return func(ctx context.Context, key string) bool {
		_, _, _, ok, err := s.Take(ctx, key)
		return err == nil && ok
	}
}

// openRateMap is the usual hand-made keyed limiter: a sync.Map of
// x/time/rate limiters, created on first use.
func openRateMap(b *testing.B) func(context.Context, string) bool {
	var m sync.Map
	return func(_ context.Context, key string) bool {
		v, ok := m.Load(key)
		if !ok {
			v, _ = m.LoadOrStore(key, rate.NewLimiter(rate.Limit(1<<40), 1<<40))
		}
		return v.(*rate.Limiter).Allow()
	}
}

// BenchmarkRateLimitMemory: ns/op and allocs/op of one decision, serial and
// parallel (GOMAXPROCS goroutines), on 1 key and on 100,000 keys (created
// before the timer starts).
func BenchmarkRateLimitMemory(b *testing.B) {
	for _, lib := range memLibs {
		for _, nkeys := range []int{1, 100_000} {
			keys := benchKeys(nkeys)
			name := lib.name + "/keys=" + map[int]string{1: "1", 100_000: "100k"}[nkeys]
			b.Run(name+"/serial", func(b *testing.B) {
				take := warm(b, lib, keys)
				ctx := context.Background()
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					if !take(ctx, keys[i%len(keys)]) {
						b.Fatal("denied")
					}
				}
			})
			b.Run(name+"/parallel", func(b *testing.B) {
				take := warm(b, lib, keys)
				ctx := context.Background()
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					i := rand.IntN(len(keys))
					for pb.Next() {
						if !take(ctx, keys[i]) {
							b.Error("denied")
							return
						}
						if i++; i == len(keys) {
							i = 0
						}
					}
				})
			})
		}
	}
}

func warm(b *testing.B, lib memLib, keys []string) func(context.Context, string) bool {
	take := lib.open(b)
	ctx := context.Background()
	for _, k := range keys {
		take(ctx, k)
	}
	return take
}
