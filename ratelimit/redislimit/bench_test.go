package redislimit_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
)

// benchBackend is the real Redis named by SLUICE_REDIS_URL, or miniredis
// (which measures the client side only).
func benchBackend(b *testing.B) backend {
	if os.Getenv("SLUICE_REDIS_URL") == "" {
		return miniBackend(b)
	}
	return realBackend(b)
}

// BenchmarkConsume measures one single-limit decision, serially and from
// 64 goroutines, with and without batching. Run it against real Redis:
//
//	SLUICE_REDIS_URL=redis://127.0.0.1:6379/15 go test -run '^$' -bench Consume ./ratelimit/redislimit/
func BenchmarkConsume(b *testing.B) {
	limits := map[string]ratelimit.Limit{
		"fixed":   ratelimit.PerSecond(1 << 40),
		"sliding": ratelimit.PerSecond(1 << 40).With(ratelimit.SlidingWindow),
		"bucket":  ratelimit.Per(1<<30, time.Second).With(ratelimit.TokenBucket),
	}
	for _, mode := range []string{"batched", "unbatched"} {
		for _, alg := range []string{"fixed", "sliding", "bucket"} {
			l := limits[alg]
			b.Run(mode+"/"+alg+"/serial", func(b *testing.B) {
				s := benchStore(b, mode == "unbatched")
				ctx := context.Background()
				r := req("bench:{serial}", l, 1)
				for b.Loop() {
					if _, err := s.Consume(ctx, r); err != nil {
						b.Fatal(err)
					}
				}
				reportRate(b)
			})
			b.Run(mode+"/"+alg+"/parallel64", func(b *testing.B) {
				s := benchStore(b, mode == "unbatched")
				benchParallel(b, s, l)
			})
		}
	}
}

func benchParallel(b *testing.B, s *redislimit.Store, l ratelimit.Limit) {
	var next atomic.Int64
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		r := req("bench:{"+strconv.FormatInt(next.Add(1), 10)+"}", l, 1)
		for pb.Next() {
			if _, err := s.Consume(ctx, r); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportRate(b)
}

func reportRate(b *testing.B) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "decisions/s")
	}
}

func benchStore(b *testing.B, unbatched bool) *redislimit.Store {
	be := benchBackend(b)
	s, err := redislimit.New(be.client(b), redislimit.Options{Prefix: be.prefix, DisableBatching: unbatched})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}
