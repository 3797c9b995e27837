package redisqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// registryCase runs fn on each server, with a plain client and (on
// miniredis) a Cluster client, where the registry is in another slot than
// the queues and is written outside the scripts.
func registryCase(t *testing.T, fn func(t *testing.T, s server, open func(clock.Clock) *redisqueue.Backend)) {
	for _, srv := range servers {
		for _, cluster := range []bool{false, true} {
			name := srv.name + map[bool]string{false: "/single", true: "/cluster"}[cluster]
			t.Run(name, func(t *testing.T) {
				s := srv.open(t)
				var c redis.UniversalClient
				if cluster {
					c = s.clusterClient(t)
				} else {
					c = s.client(t)
				}
				fn(t, s, func(clk clock.Clock) *redisqueue.Backend { return s.backendOn(t, c, withClock(clk)) })
			})
		}
	}
}

// loseRegistry deletes the registry of queues, as a Redis restart without
// persistence, FLUSHDB or a failover that lost the write would.
func loseRegistry(t *testing.T, s server) {
	t.Helper()
	if err := s.client(t).Del(context.Background(), string(s.prefix)+"queues").Err(); err != nil {
		t.Fatal(err)
	}
}

func leaseShort(t *testing.T, b *redisqueue.Backend, q string) queue.Lease {
	t.Helper()
	ls, err := b.Lease(context.Background(), backend.LeaseRequest{Queues: []string{q}, Max: 1, LeaseFor: time.Second, WorkerID: "w"})
	if err != nil || len(ls) != 1 {
		t.Fatalf("Lease(%s) = %v, %v; want one job", q, ls, err)
	}
	return ls[0]
}

// wantRescued checks that b's rescuer requeues the one expired lease and
// that q is listed by Stats again.
func wantRescued(t *testing.T, b *redisqueue.Backend, q, id string) {
	t.Helper()
	ctx := context.Background()
	res, err := b.RescueExpired(ctx, backend.RescueRequest{})
	if err != nil || res.Requeued != 1 {
		t.Fatalf("RescueExpired = %+v, %v; want the expired lease requeued", res, err)
	}
	if j, err := b.Get(ctx, id); err != nil || j.State != queue.StatePending {
		t.Fatalf("job after rescue = %+v, %v; want pending", j, err)
	}
	st, err := b.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range st {
		if x.Queue == q && x.Counts[queue.StatePending] == 1 {
			return
		}
	}
	t.Fatalf("Stats = %+v, want queue %s with its pending job", st, q)
}

// TestRegistryHeals checks that a queue the process has already seen is
// registered again by its next enqueue after Redis lost the registry, so
// its expired leases are rescued and it shows in Stats.
func TestRegistryHeals(t *testing.T) {
	registryCase(t, func(t *testing.T, s server, open func(clock.Clock) *redisqueue.Backend) {
		clk := clock.NewFake(epoch)
		b := open(clk)
		c := queue.NewClient(b)
		mustEnqueue(t, c, queue.JobSpec{Queue: "c:d", Kind: "k", RunAt: epoch.Add(time.Hour)})
		loseRegistry(t, s)
		j := mustEnqueue(t, c, queue.JobSpec{Queue: "c:d", Kind: "k"})
		leaseShort(t, b, "c:d")
		clk.Advance(time.Minute)
		wantRescued(t, b, "c:d", j.ID)
	})
}

// TestRegistryHealsByLease checks that the registry lost between an
// enqueue and its lease is written again by the lease.
func TestRegistryHealsByLease(t *testing.T) {
	registryCase(t, func(t *testing.T, s server, open func(clock.Clock) *redisqueue.Backend) {
		clk := clock.NewFake(epoch)
		b := open(clk)
		j := mustEnqueue(t, queue.NewClient(b), queue.JobSpec{Queue: "mail", Kind: "k"})
		loseRegistry(t, s)
		leaseShort(t, b, "mail")
		clk.Advance(time.Minute)
		wantRescued(t, b, "mail", j.ID)
	})
}

// TestRegistryHealsAcrossRestart checks the same across a server restart:
// the process that enqueued and leased is gone, and a new Backend on the
// same Redis rescues the lease.
func TestRegistryHealsAcrossRestart(t *testing.T) {
	registryCase(t, func(t *testing.T, s server, open func(clock.Clock) *redisqueue.Backend) {
		clk := clock.NewFake(epoch)
		old := open(clk)
		c := queue.NewClient(old)
		mustEnqueue(t, c, queue.JobSpec{Queue: "mail", Kind: "k", RunAt: epoch.Add(time.Hour)})
		loseRegistry(t, s)
		j := mustEnqueue(t, c, queue.JobSpec{Queue: "mail", Kind: "k"})
		leaseShort(t, old, "mail")
		if err := old.Close(); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Minute)
		wantRescued(t, open(clk), "mail", j.ID)
	})
}
