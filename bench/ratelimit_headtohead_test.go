package bench

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
)

// BenchmarkRateLimitHeadToHead measures the Redis limiters in alternation:
// 15 rounds, each giving every library the same g goroutines for 200 ms in
// turn, on 10,000 keys with a limit that admits every call. Interleaving
// keeps a busy, shared machine from favouring whichever library happened
// to run in a quiet minute. It reports each library's median decisions/s
// over the rounds and the median of its per-round ratio to redis_rate. One
// iteration takes about 20 s per goroutine count; run it with -benchtime 1x.
func BenchmarkRateLimitHeadToHead(b *testing.B) {
	libs := []redisLib{
		{"redislimit-gcra", openRedislimit(ratelimit.TokenBucket, redislimit.Options{}, 0)},
		{"redislimit-gcra-deadline", openRedislimit(ratelimit.TokenBucket, redislimit.Options{}, time.Second)},
		{"redislimit-fixed", openRedislimit(ratelimit.FixedWindow, redislimit.Options{}, 0)},
		{"redis_rate", openRedisRate},
		{"ulule", openUlule},
	}
	const base = 3 // redis_rate
	keys := benchKeys(10_000)
	for _, g := range []int{1, 8, 64} {
		b.Run("goroutines="+strconv.Itoa(g), func(b *testing.B) {
			c, prefix := benchRedis(b)
			allows := make([]func(context.Context, string) (bool, error), len(libs))
			for i, lib := range libs {
				allows[i] = lib.open(b, c, prefix+":"+strconv.Itoa(i), 1<<30, time.Hour)
			}
			rates := make([][]float64, len(libs))
			for range b.N {
				for range 15 {
					for i, allow := range allows {
						rates[i] = append(rates[i], measureRate(b, g, 200*time.Millisecond, keys, allow))
					}
				}
			}
			for i, lib := range libs {
				ratios := make([]float64, len(rates[i]))
				for r := range ratios {
					ratios[r] = rates[i][r] / rates[base][r]
				}
				b.ReportMetric(median(rates[i]), lib.name+"-decisions/s")
				if i != base {
					b.ReportMetric(median(ratios), lib.name+"/redis_rate")
				}
			}
		})
	}
}

// measureRate runs allow from g goroutines for about d and returns the
// decisions per second.
func measureRate(b *testing.B, g int, d time.Duration, keys []string, allow func(context.Context, string) (bool, error)) float64 {
	var ops atomic.Int64
	var wg sync.WaitGroup
	ctx := context.Background()
	start := time.Now()
	end := start.Add(d)
	for w := range g {
		wg.Go(func() {
			n := 0
			for i := w * 997; time.Now().Before(end); i++ {
				if _, err := allow(ctx, keys[i%len(keys)]); err != nil {
					b.Error(err)
					return
				}
				n++
			}
			ops.Add(int64(n))
		})
	}
	wg.Wait()
	return float64(ops.Load()) / time.Since(start).Seconds()
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
