package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"math/bits"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Rate-limit benchmarks: memlimit against sethvargo/go-limiter and a per-key
// map of x/time/rate; redislimit against go-redis/redis_rate and
// ulule/limiter on the same Redis. Run them all with
//
//	cd bench && go test -run '^$' -bench 'RateLimit' -benchmem -count 5 .
//
// The Redis ones use SLUICE_BENCH_REDIS_URL (default
// redis://127.0.0.1:6379/14), write keys under a random prefix and delete
// exactly those keys afterwards; they skip when Redis does not answer.

// benchRedisURL is the Redis the benchmarks use.
func benchRedisURL() string {
	if u := os.Getenv("SLUICE_BENCH_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/14"
}

// benchRedis opens a client with default pool settings (as each library's
// user would) and returns it with a random key prefix whose keys are deleted
// when the benchmark ends.
func benchRedis(b *testing.B) (*redis.Client, string) {
	b.Helper()
	opts, err := redis.ParseURL(benchRedisURL())
	if err != nil {
		b.Fatalf("redis URL: %v", err)
	}
	c := redis.NewClient(opts)
	if err := c.Ping(context.Background()).Err(); err != nil {
		_ = c.Close()
		b.Skipf("no Redis at %s: %v", benchRedisURL(), err)
	}
	buf := make([]byte, 6)
	_, _ = rand.Read(buf)
	prefix := "sluicebench-" + hex.EncodeToString(buf)
	b.Cleanup(func() {
		deleteMatching(c, "*"+prefix+"*")
		_ = c.Close()
	})
	return c, prefix
}

func deleteMatching(c *redis.Client, pattern string) {
	ctx := context.Background()
	iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		if batch = append(batch, iter.Val()); len(batch) == 500 {
			c.Del(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		c.Del(ctx, batch...)
	}
}

// benchKeys returns n distinct logical keys shaped like a Limiter's.
func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "rate-limit:bench:op:{user:" + strconv.Itoa(i) + "}"
	}
	return keys
}

// latency is a log-linear histogram (16 sub-buckets per power of two, so
// about 6% resolution) that records without allocating.
type latency struct{ counts [1024]uint64 }

func (h *latency) add(d time.Duration) {
	v := uint64(max(d, 0))
	e := max(0, bits.Len64(v)-5)
	if e == 0 {
		h.counts[v]++
		return
	}
	h.counts[(e+1)*16+int(v>>e)-16]++
}

func (h *latency) merge(o *latency) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
}

// quantile returns the q-quantile, as the middle of its bucket.
func (h *latency) quantile(q float64) time.Duration {
	var total uint64
	for _, c := range h.counts {
		total += c
	}
	rank := uint64(q * float64(total))
	var seen uint64
	for i, c := range h.counts {
		if seen += c; seen > rank {
			if i < 32 {
				return time.Duration(i)
			}
			e := i/16 - 1
			lo := uint64(i%16+16) << e
			return time.Duration(lo + (uint64(1)<<e)/2)
		}
	}
	return 0
}

// runConcurrent runs b.N calls of op spread over g goroutines and reports
// decisions/s and the p50 and p99 latency of one call. op gets the call's
// index.
func runConcurrent(b *testing.B, g int, op func(i int) error) {
	b.Helper()
	hists := make([]latency, g)
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for w := range g {
		wg.Go(func() {
			h := &hists[w]
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				t0 := time.Now()
				if err := op(int(i)); err != nil {
					failed.Store(err)
					return
				}
				h.add(time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	var all latency
	for i := range hists {
		all.merge(&hists[i])
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "decisions/s")
	b.ReportMetric(float64(all.quantile(0.50))/1e3, "p50-µs")
	b.ReportMetric(float64(all.quantile(0.99))/1e3, "p99-µs")
}
