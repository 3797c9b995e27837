package bench

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	ulule "github.com/ulule/limiter/v3"
	ululeredis "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
)

// redisLib is one Redis-backed limiter under test: allow takes one unit
// from key under a limit of quota per window and reports whether it was
// admitted.
type redisLib struct {
	name string
	open func(b *testing.B, c *redis.Client, prefix string, quota int64, window time.Duration) func(ctx context.Context, key string) (bool, error)
}

// The -deadline variant gives every call a deadline (1 s), as a
// ratelimit.Limiter does, so calls always wait for a batch instead of
// sending from their own goroutine.
var redisLibs = []redisLib{
	{"redislimit-gcra", openRedislimit(ratelimit.TokenBucket, redislimit.Options{}, 0)},
	{"redislimit-gcra-deadline", openRedislimit(ratelimit.TokenBucket, redislimit.Options{}, time.Second)},
	{"redislimit-fixed", openRedislimit(ratelimit.FixedWindow, redislimit.Options{}, 0)},
	{"redislimit-gcra-unbatched", openRedislimit(ratelimit.TokenBucket, redislimit.Options{DisableBatching: true}, 0)},
	{"redis_rate-gcra", openRedisRate},
	{"ulule-fixed", openUlule},
}

func openRedislimit(alg ratelimit.Algorithm, opts redislimit.Options, deadline time.Duration) func(*testing.B, *redis.Client, string, int64, time.Duration) func(context.Context, string) (bool, error) {
	return func(b *testing.B, c *redis.Client, prefix string, quota int64, window time.Duration) func(context.Context, string) (bool, error) {
		opts.Prefix = keyspace.Prefix(prefix + ":")
		s, err := redislimit.New(c, opts)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		l := ratelimit.Per(quota, window).With(alg)
		return func(ctx context.Context, key string) (bool, error) {
			if deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, deadline)
				defer cancel()
			}
			d, err := s.Consume(ctx, ratelimit.Request{Key: key, Limit: l, Cost: 1})
			return d.Allowed, err
		}
	}
}

func openRedisRate(b *testing.B, c *redis.Client, prefix string, quota int64, window time.Duration) func(context.Context, string) (bool, error) {
	lim := redis_rate.NewLimiter(c)
	l := redis_rate.Limit{Rate: int(quota), Burst: int(quota), Period: window}
	return func(ctx context.Context, key string) (bool, error) {
		r, err := lim.Allow(ctx, prefix+":"+key, l)
		if err != nil {
			return false, err
		}
		return r.Allowed > 0, nil
	}
}

func openUlule(b *testing.B, c *redis.Client, prefix string, quota int64, window time.Duration) func(context.Context, string) (bool, error) {
	store, err := ululeredis.NewStoreWithOptions(c, ulule.StoreOptions{Prefix: prefix + ":ulule"})
	if err != nil {
		b.Fatal(err)
	}
	lim := ulule.New(store, ulule.Rate{Period: window, Limit: quota})
	return func(ctx context.Context, key string) (bool, error) {
		r, err := lim.Get(ctx, key)
		return err == nil && !r.Reached, err
	}
}

// BenchmarkRateLimitRedis: decisions/s, p50/p99 latency and allocations of
// one single-limit decision at 1, 8 and 64 goroutines, on 10,000 keys with
// a limit high enough that every call is admitted (each library does its
// full read-modify-write).
func BenchmarkRateLimitRedis(b *testing.B) {
	keys := benchKeys(10_000)
	for _, lib := range redisLibs {
		for _, g := range []int{1, 8, 64} {
			b.Run(lib.name+"/goroutines="+strconv.Itoa(g), func(b *testing.B) {
				c, prefix := benchRedis(b)
				allow := lib.open(b, c, prefix, 1<<30, time.Hour)
				ctx := context.Background()
				runConcurrent(b, g, func(i int) error {
					_, err := allow(ctx, keys[i%len(keys)])
					return err
				})
			})
		}
	}
}

// BenchmarkRateLimitOverAdmission: each iteration sends 64 goroutines × 8
// calls at one fresh key with a limit of 20 per hour and counts what is
// admitted; anything above 20 is over-admission (an hour-long window keeps
// refill out of the count). Run it with a fixed count, such as
// -benchtime 50x.
func BenchmarkRateLimitOverAdmission(b *testing.B) {
	const (
		limit      = 20
		goroutines = 64
		calls      = 8
	)
	for _, lib := range redisLibs {
		b.Run(lib.name, func(b *testing.B) {
			c, prefix := benchRedis(b)
			allow := lib.open(b, c, prefix, limit, time.Hour)
			ctx := context.Background()
			var over, admitted int64
			for i := range b.N {
				key := "rate-limit:bench:burst:{round:" + strconv.Itoa(i) + "}"
				n := hammer(b, ctx, allow, key, goroutines, calls)
				admitted += n
				over += max(0, n-limit)
			}
			b.ReportMetric(float64(admitted)/float64(b.N), "admitted/round")
			b.ReportMetric(float64(over)/float64(b.N), "over-admitted/round")
		})
	}
}

func hammer(b *testing.B, ctx context.Context, allow func(context.Context, string) (bool, error), key string, goroutines, calls int) int64 {
	var n atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range goroutines {
		wg.Go(func() {
			<-start
			for range calls {
				ok, err := allow(ctx, key)
				if err != nil {
					b.Error(err)
					return
				}
				if ok {
					n.Add(1)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	return n.Load()
}
