package memlimit_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

// benchLimits never deny, so every call takes the full counting path.
var benchLimits = []ratelimit.Limit{
	ratelimit.PerSecond(1 << 40),
	ratelimit.PerSecond(1 << 40).With(ratelimit.SlidingWindow),
	ratelimit.PerSecond(1 << 40).With(ratelimit.TokenBucket),
}

func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("rate-limit:ip:login:{ip:10.%d.%d.%d}", i>>16&255, i>>8&255, i&255)
	}
	return keys
}

// warm returns a store holding a counter for every key, so that the
// benchmarks measure the steady state of existing keys.
func warm(keys []string, l ratelimit.Limit) *memlimit.Store {
	s := memlimit.New(memlimit.Options{})
	for _, k := range keys {
		s.ConsumeOne(context.Background(), ratelimit.Request{Key: k, Limit: l, Cost: 1})
	}
	return s
}

// BenchmarkConsumeOne is the allocation-free single-request path, on the
// real clock, for 1 hot key and for 100k keys, serial and parallel.
func BenchmarkConsumeOne(b *testing.B) {
	for _, l := range benchLimits {
		for _, nkeys := range []int{1, 100_000} {
			keys := benchKeys(nkeys)
			name := fmt.Sprintf("%s/keys=%d", l.Algorithm, nkeys)
			b.Run(name+"/serial", func(b *testing.B) {
				s := warm(keys, l)
				defer s.Close()
				ctx := context.Background()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					s.ConsumeOne(ctx, ratelimit.Request{Key: keys[i%nkeys], Limit: l, Cost: 1})
					i++
				}
			})
			b.Run(name+"/parallel", func(b *testing.B) {
				s := warm(keys, l)
				defer s.Close()
				ctx := context.Background()
				var seed atomic.Int64
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					i := int(seed.Add(7919))
					for pb.Next() {
						s.ConsumeOne(ctx, ratelimit.Request{Key: keys[i%nkeys], Limit: l, Cost: 1})
						i++
					}
				})
			})
		}
	}
}

// BenchmarkConsume goes through the ratelimit.Store interface: one request
// (the Results slice is its allocation) and three limits on one key.
func BenchmarkConsume(b *testing.B) {
	var st ratelimit.Store = memlimit.New(memlimit.Options{})
	defer st.(*memlimit.Store).Close()
	ctx := context.Background()
	one := []ratelimit.Request{{Key: "k", Limit: benchLimits[0], Cost: 1}}
	three := make([]ratelimit.Request, len(benchLimits))
	for i, l := range benchLimits {
		three[i] = ratelimit.Request{Key: "k", Limit: l, Cost: 1}
	}
	for _, tc := range []struct {
		name string
		reqs []ratelimit.Request
	}{{"limits=1", one}, {"limits=3", three}} {
		b.Run(tc.name+"/serial", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				st.Consume(ctx, tc.reqs...)
			}
		})
		b.Run(tc.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					st.Consume(ctx, tc.reqs...)
				}
			})
		})
	}
}
