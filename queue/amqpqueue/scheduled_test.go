package amqpqueue

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/redisqueue"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

func openSQLiteScheduler(t *testing.T, clk clock.Clock) backend.Backend {
	t.Helper()
	s, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "sched.db"), sqlitequeue.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openRedisScheduler(t *testing.T, clk clock.Clock) backend.Backend {
	t.Helper()
	o, prefix, ok := redistest.Real(t)
	if !ok {
		t.Skipf("%s is not set: skipping the lane with a Redis scheduler", redistest.EnvURL)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	s, err := redisqueue.New(c, redisqueue.Options{Clock: clk, Prefix: prefix, DisableBreaker: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformanceScheduled runs the suite on the lane with a Scheduler:
// the lane enforces tenant limits, the waiting backlog, the fair order
// and weights, pauses, group limits, crawl delays and completion jobs as
// the stores do. With a SQLite Scheduler the whole suite (what the
// Scheduler adds must not break the rest); with Redis, the production
// one, its tenant and group tests when SLUICE_REDIS_URL is set.
func TestConformanceScheduled(t *testing.T) {
	brokerURL(t)
	t.Run("SQLite", func(t *testing.T) {
		queuetest.Run(t, func(t *testing.T, clk clock.Clock) backend.Backend {
			return open(t, Options{Clock: clk, Priorities: 3, LeaseWait: 300 * time.Millisecond, Scheduler: openSQLiteScheduler(t, clk)})
		})
	})
	t.Run("Redis", func(t *testing.T) {
		f := func(t *testing.T, clk clock.Clock) backend.Backend {
			return open(t, Options{Clock: clk, Priorities: 3, LeaseWait: 300 * time.Millisecond, Scheduler: openRedisScheduler(t, clk)})
		}
		t.Run("Tenants", func(t *testing.T) { queuetest.RunTenants(t, f) })
		t.Run("Groups", func(t *testing.T) { queuetest.RunGroups(t, f) })
	})
}

// TestScheduledSplit checks where a lane with a Scheduler keeps each job:
// with a tenant or a group on the Scheduler (ids starting "g"), without
// on the broker; List answers only where the listing is whole; a queue's
// pause holds the broker's jobs of the queue too.
func TestScheduledSplit(t *testing.T) {
	brokerURL(t)
	clk := clock.NewFake(queuetest.Epoch)
	b := open(t, Options{Clock: clk, LeaseWait: 300 * time.Millisecond, Scheduler: openSQLiteScheduler(t, clk)})
	c := queue.NewClient(b)
	res, err := c.EnqueueBatch(bg(), []queue.JobSpec{
		{Queue: "q", Kind: "k", Tenant: "t"}, {Queue: "q", Kind: "k"}, {Queue: "q", Kind: "k", Group: "g1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false, true} {
		if got := strings.HasPrefix(res[i].Job.ID, schedPrefix); got != want {
			t.Errorf("job %d id %q: on the Scheduler %v, want %v", i, res[i].Job.ID, got, want)
		}
	}
	page, err := b.List(bg(), queue.ListFilter{Tenant: "t"})
	if err != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != res[0].Job.ID {
		t.Fatalf("List(tenant t) = %v, %v; want the tenant's job", page, err)
	}
	waitBrokerHolds(t, b, "q")
	if _, err := b.List(bg(), queue.ListFilter{Queue: "q"}); !errors.Is(err, queue.ErrUnsupported) {
		t.Fatalf("List(queue q) with a broker job = %v, want ErrUnsupported", err)
	}
	if _, err := c.BackOff(bg(), queue.QueueScope("q"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if ls, err := b.Lease(bg(), backend.LeaseRequest{Queues: []string{"q"}, WorkerID: "w", Max: 10, LeaseFor: time.Minute}); err != nil || len(ls) != 0 {
		t.Fatalf("Lease of a paused queue = %v, %v; want nothing", ls, err)
	}
	clk.Advance(2 * time.Minute)
	var got []queue.Lease
	testutil.Eventually(t, "the three jobs once the pause ended", func() error {
		ls, err := b.Lease(bg(), backend.LeaseRequest{Queues: []string{"q"}, WorkerID: "w", Max: 10, LeaseFor: time.Minute})
		got = append(got, ls...)
		if err != nil || len(got) < 3 {
			return fmt.Errorf("%d leased, %v", len(got), err)
		}
		return nil
	})
	for _, l := range got {
		if err := b.Complete(bg(), l.Job.ID, l.Token, nil); err != nil {
			t.Fatalf("Complete(%s): %v", l.Job.ID, err)
		}
		if j, err := b.Get(bg(), l.Job.ID); err != nil || j.State != queue.StateCompleted {
			t.Fatalf("Get(%s) = %+v, %v", l.Job.ID, j, err)
		}
	}
}

// waitBrokerHolds waits until the broker has the ready job of q.
func waitBrokerHolds(t *testing.T, b *Backend, q string) {
	t.Helper()
	testutil.Eventually(t, "the broker to hold a job of "+q, func() error {
		if empty, err := b.brokerEmpty(bg(), q); err != nil || empty {
			return fmt.Errorf("empty %v, %v", empty, err)
		}
		return nil
	})
}
