package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
)

// countingStore wraps a real ratelimit.Store, counting its round trips and
// the requests and cost they carry; down makes every call fail.
type countingStore struct {
	ratelimit.Store
	mu    sync.Mutex
	calls int
	keys  map[string]int64 // cost counted per key
	down  bool
}

func (s *countingStore) Consume(ctx context.Context, reqs ...ratelimit.Request) (ratelimit.Decision, error) {
	s.mu.Lock()
	s.calls++
	if s.keys == nil {
		s.keys = map[string]int64{}
	}
	for _, r := range reqs {
		s.keys[r.Key] += r.Cost
	}
	down := s.down
	s.mu.Unlock()
	if down {
		return ratelimit.Decision{}, errors.New("load store down")
	}
	return s.Store.Consume(ctx, reqs...)
}

func (s *countingStore) counts() (calls int, keys map[string]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys = map[string]int64{}
	for k, v := range s.keys {
		keys[k] = v
	}
	return s.calls, keys
}

// loadStores returns the real load stores the priority tests run on:
// memlimit, redislimit on miniredis, and redislimit on the Redis named by
// SLUICE_REDIS_URL when it is set.
func loadStores(t *testing.T, clk *clock.Fake) map[string]ratelimit.Store {
	t.Helper()
	mem := memlimit.New(memlimit.Options{Clock: clk, SweepInterval: -1})
	t.Cleanup(func() { mem.Close() })
	stores := map[string]ratelimit.Store{"memlimit": mem}
	m := miniredis.RunT(t)
	stores["miniredis"] = openRedisLimit(t, &redis.Options{Addr: m.Addr()}, "", clk)
	if opts, prefix, ok := redistest.Real(t); ok {
		stores["redis"] = openRedisLimit(t, opts, prefix, clk)
	}
	return stores
}

func openRedisLimit(t *testing.T, opts *redis.Options, prefix keyspace.Prefix, clk *clock.Fake) ratelimit.Store {
	t.Helper()
	c := redis.NewClient(opts)
	s, err := redislimit.New(c, redislimit.Options{Prefix: prefix, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(); _ = c.Close() })
	return s
}

// TestClientPriorityLoadStoreDown: with the load store failing, a job gets
// the base priority of the tier formula (0 recent jobs), not the spec's own
// priority, whether it comes alone or in a batch.
func TestClientPriorityLoadStoreDown(t *testing.T) {
	t.Parallel()
	b, done := openExample()
	defer done()
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	store := &countingStore{Store: memlimit.New(memlimit.Options{Clock: clk, SweepInterval: -1}), down: true}
	defer store.Store.(*memlimit.Store).Close()
	c := queue.NewClient(b, queue.ClientConfig{Priority: queue.PriorityConfig{
		Func: queue.LoadPriority(queue.DefaultBasePriority, func(string) queue.Tier { return queue.TierFree }),
		Load: store,
	}})
	ctx := context.Background()
	for _, prio := range []int{0, 2, 50} {
		j, err := c.Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k", Tenant: "acme", Priority: prio})
		if err != nil {
			t.Fatal(err)
		}
		if j.Priority != queue.DefaultBasePriority {
			t.Errorf("spec priority %d, load store down: got priority %d, want the base %d", prio, j.Priority, queue.DefaultBasePriority)
		}
	}
	specs := make([]queue.JobSpec, 40)
	for i := range specs {
		specs[i] = queue.JobSpec{Queue: "q", Kind: "k", Tenant: fmt.Sprintf("t%d", i%2)}
	}
	res, err := c.EnqueueBatch(ctx, specs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Job.Priority != queue.DefaultBasePriority {
			t.Fatalf("batch job %d, load store down: got priority %d, want the base %d", i, r.Job.Priority, queue.DefaultBasePriority)
		}
	}
}

// TestClientPriorityOneLoadReadPerTenant: a batch of N jobs for K tenants
// asks the load store K times, once per tenant with the tenant's whole
// count, and each job still gets the priority it would have had enqueued
// one by one.
func TestClientPriorityOneLoadReadPerTenant(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	for name, real := range loadStores(t, clk) {
		t.Run(name, func(t *testing.T) {
			b, done := openExample()
			defer done()
			store := &countingStore{Store: real}
			c := queue.NewClient(b, queue.ClientConfig{Priority: queue.PriorityConfig{
				Func: queue.LoadPriority(queue.DefaultBasePriority, func(string) queue.Tier { return queue.TierFree }),
				Load: store,
			}})
			const n, k = 90, 3 // tenant t0 gets 30 jobs: the last 5 are over TierFree's 25
			specs := make([]queue.JobSpec, 0, n+1)
			for i := 0; i < n; i++ {
				specs = append(specs, queue.JobSpec{Queue: "q", Kind: "k", Tenant: fmt.Sprintf("%s-t%d", name, i%k)})
			}
			specs = append(specs, queue.JobSpec{Queue: "q", Kind: "k", Priority: 4}) // no tenant: not counted
			res, err := c.EnqueueBatch(context.Background(), specs)
			if err != nil {
				t.Fatal(err)
			}
			calls, keys := store.counts()
			if calls != k {
				t.Errorf("load store calls = %d, want %d (one per tenant)", calls, k)
			}
			for key, cost := range keys {
				if cost != n/k {
					t.Errorf("load counted for %s = %d, want %d", key, cost, n/k)
				}
			}
			for i, r := range res[:n] {
				nth := int64(i/k + 1) // the job's place among its tenant's jobs
				if want := queue.TierFree.Priority(queue.DefaultBasePriority, nth); r.Job.Priority != want {
					t.Errorf("job %d (tenant's job %d): priority %d, want %d", i, nth, r.Job.Priority, want)
				}
			}
			if got := res[n].Job.Priority; got != 4 {
				t.Errorf("job without tenant: priority %d, want its own 4", got)
			}
		})
	}
}
