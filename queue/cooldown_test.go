package queue_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// leaseLog records how many jobs each lease call took.
type leaseLog struct {
	backend.Backend
	mu  sync.Mutex
	got []int
}

func (l *leaseLog) Lease(ctx context.Context, req backend.LeaseRequest) ([]queue.Lease, error) {
	ls, err := l.Backend.Lease(ctx, req)
	l.mu.Lock()
	l.got = append(l.got, len(ls))
	l.mu.Unlock()
	return ls, err
}

func (l *leaseLog) calls() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.got...)
}

// cooldownWorker enqueues before jobs, then runs a worker of
// concurrency conc with a one-hour LeaseCooldown on a fake clock; ran
// counts the jobs it has run.
func cooldownWorker(t *testing.T, conc, before int) (*leaseLog, *queue.Client, *clock.Fake, *atomic.Int64) {
	t.Helper()
	store, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlitequeue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	b := &leaseLog{Backend: store}
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	w := queue.NewWorker(b, queue.WorkerConfig{
		Queues: []string{"q"}, Concurrency: conc, LeaseFor: time.Hour, PollInterval: 24 * time.Hour,
		LeaseCooldown: time.Hour, CleanupEvery: -1, Clock: clk, Logger: slog.New(slog.DiscardHandler),
	})
	cl := queue.NewClient(b)
	enqueueN(t, cl, before)
	var ran atomic.Int64
	w.Handle("k", queue.HandlerFunc(func(context.Context, *queue.Job) ([]byte, error) {
		ran.Add(1)
		return nil, nil
	}))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return b, cl, clk, &ran
}

func enqueueN(t *testing.T, c *queue.Client, n int) {
	t.Helper()
	for range n {
		if _, err := c.Enqueue(context.Background(), queue.JobSpec{Queue: "q", Kind: "k"}); err != nil {
			t.Fatal(err)
		}
	}
}

// After a lease that left slots free, a worker with a LeaseCooldown
// leases again only once the cooldown has passed, and then takes the
// work that arrived meanwhile in one call.
func TestLeaseCooldownGathersWork(t *testing.T) {
	b, c, clk, ran := cooldownWorker(t, 10, 1)
	testutil.Eventually(t, "the first job to run", func() bool { return ran.Load() == 1 })
	enqueueN(t, c, 3) // announced in process: the worker wakes, and waits
	// The first lease was at the clock's start, which never moved: the
	// cooldown's timer ends an hour after it.
	until := clk.Now().Add(time.Hour)
	testutil.Eventually(t, "the worker to wait out its cooldown", func() bool { return slices.Contains(clk.Pending(), until) })
	if got, calls := ran.Load(), b.calls(); got != 1 || len(calls) != 1 {
		t.Fatalf("before the cooldown passed: %d jobs run, lease calls %v; want 1 job, one call", got, calls)
	}
	clk.Advance(time.Hour)
	testutil.Eventually(t, "the three to run", func() bool { return ran.Load() == 4 })
	if calls := b.calls(); len(calls) != 2 || calls[0] != 1 || calls[1] != 3 {
		t.Fatalf("jobs per lease call: %v; want [1 3]", calls)
	}
}

// A lease that fills every free slot is followed at once: the cooldown
// never holds back a worker that has more work than slots.
func TestLeaseCooldownKeepsUpUnderLoad(t *testing.T) {
	_, _, _, ran := cooldownWorker(t, 2, 9)
	// The clock never moves: every lease fills the free slots until the
	// last job is taken.
	testutil.Eventually(t, "all nine to run", func() bool { return ran.Load() == 9 })
}
