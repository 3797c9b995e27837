package flow_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
)

// redisTarget is where a fleet test runs: miniredis, or the real Redis named
// by SLUICE_REDIS_URL under a random prefix removed afterwards.
type redisTarget struct {
	name   string
	opts   *redis.Options
	prefix keyspace.Prefix
}

func redisTargets(t *testing.T) []redisTarget {
	t.Helper()
	m := miniredis.RunT(t)
	targets := []redisTarget{{name: "miniredis", opts: &redis.Options{Addr: m.Addr()}, prefix: keyspace.DefaultPrefix}}
	opts, prefix, ok := redistest.Real(t)
	if !ok {
		t.Log("SLUICE_REDIS_URL not set: running on miniredis only")
		return targets
	}
	return append(targets, redisTarget{name: "redis", opts: opts, prefix: prefix})
}

// process opens what one process of a fleet would have: its own client and
// its own store. fc nil means the store counts on Redis's clock.
func (r redisTarget) process(t *testing.T, fc *clock.Fake) *redislimit.Store {
	t.Helper()
	c := redis.NewClient(r.opts)
	opts := redislimit.Options{Prefix: r.prefix}
	if fc != nil {
		opts.Clock = fc
	}
	s, err := redislimit.New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(); _ = c.Close() })
	return s
}

// TestSharedBudgetAcrossRedisClients: two clients, each with its own
// connection pool and store, share one budget and together never exceed
// it.
func TestSharedBudgetAcrossRedisClients(t *testing.T) {
	for _, target := range redisTargets(t) {
		t.Run(target.name, func(t *testing.T) {
			fc := clock.NewFake(epoch)
			a := sharedBudget(t, target.process(t, fc), fc, "search", 10, time.Second)
			b := sharedBudget(t, target.process(t, fc), fc, "search", 10, time.Second)
			testFleet(t, fc, a, b)
		})
	}
}

// TestSharedBudgetOnRedisTime runs the production path, with Redis's own
// clock: a budget of 10 per hour admits exactly 10 of 40 concurrent calls
// from two clients, and refuses the rest at once when they cannot be served
// before their deadline.
func TestSharedBudgetOnRedisTime(t *testing.T) {
	for _, target := range redisTargets(t) {
		t.Run(target.name, func(t *testing.T) {
			a, err := flow.NewSharedBudget(target.process(t, nil), "export", 10, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			b, err := flow.NewSharedBudget(target.process(t, nil), "export", 10, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			clients := []*flow.SharedBudget{a, b}
			var admitted, refused atomic.Int64
			var wg sync.WaitGroup
			for i := range 40 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					switch err := clients[i%2].Wait(ctx, 1); {
					case err == nil:
						admitted.Add(1)
					case errors.Is(err, flow.ErrWouldExceedDeadline):
						refused.Add(1)
					default:
						t.Errorf("Wait: %v", err)
					}
				}()
			}
			wg.Wait()
			if admitted.Load() != 10 || refused.Load() != 30 {
				t.Fatalf("admitted %d, refused %d of 40; want 10 and 30", admitted.Load(), refused.Load())
			}
		})
	}
}
