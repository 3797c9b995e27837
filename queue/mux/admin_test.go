package mux_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/mux"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// TestRetryOnRoute checks that a retry reaches the backend the job's id
// names, and that a route that cannot retry answers UnsupportedError.
func TestRetryOnRoute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(queuetest.Epoch)
	def, side := openSQLite(t, clk, sqlitequeue.Options{}), openSQLite(t, clk, sqlitequeue.Options{})
	lane := plain{openSQLite(t, clk, sqlitequeue.Options{}), queue.AllCapabilities.Without(queue.CapRetry)}
	m := newMux(t, def, mux.Route{Name: "side", Backend: side, Queues: []string{"s"}},
		mux.Route{Name: "lane", Backend: lane, Queues: []string{"l"}})
	c := queue.NewClient(m, queue.ClientConfig{})

	failed := func(q string) string {
		t.Helper()
		j, err := c.Enqueue(ctx, queue.JobSpec{Queue: q, Kind: "k", MaxAttempts: 1})
		if err != nil {
			t.Fatalf("Enqueue(%s): %v", q, err)
		}
		ls, err := m.Lease(ctx, backend.LeaseRequest{Queues: []string{q}, Max: 1, WorkerID: "w", LeaseFor: time.Minute})
		if err != nil || len(ls) != 1 {
			t.Fatalf("Lease(%s) = %v, %v; want one lease", q, ls, err)
		}
		if _, err := m.Fail(ctx, ls[0].Job.ID, ls[0].Token, backend.Failure{Error: "boom", Permanent: true}); err != nil {
			t.Fatalf("Fail(%s): %v", q, err)
		}
		return j.ID
	}

	for _, q := range []string{"d", "s"} {
		id := failed(q)
		j, err := c.Retry(ctx, id)
		if err != nil {
			t.Fatalf("Retry(%s) on queue %s: %v", id, q, err)
		}
		if j.ID != id || j.State != queue.StatePending || j.Attempt != 0 {
			t.Errorf("Retry(%s) = id %s state %s attempt %d; want the same id, pending, attempt 0", id, j.ID, j.State, j.Attempt)
		}
	}
	if id := failed("s"); !strings.HasPrefix(id, "side.") {
		t.Errorf("id on the side route = %q, want the prefix side.", id)
	}

	id := failed("l")
	_, err := c.Retry(ctx, id)
	if !errors.Is(err, queue.ErrUnsupported) {
		t.Errorf("Retry on a route without CapRetry = %v, want ErrUnsupported", err)
	}
}

// TestStatsCarryRoutedPause checks that a queue's pause, set through the
// router on the backend holding the queue, shows in the merged stats.
func TestStatsCarryRoutedPause(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(queuetest.Epoch)
	def, side := openSQLite(t, clk, sqlitequeue.Options{}), openSQLite(t, clk, sqlitequeue.Options{})
	m := newMux(t, def, mux.Route{Name: "side", Backend: side, Queues: []string{"s"}})
	c := queue.NewClient(m, queue.ClientConfig{})
	for _, q := range []string{"d", "s"} {
		if _, err := c.Enqueue(ctx, queue.JobSpec{Queue: q, Kind: "k"}); err != nil {
			t.Fatal(err)
		}
	}
	until, err := c.BackOff(ctx, queue.QueueScope("s"), time.Hour)
	if err != nil {
		t.Fatalf("BackOff: %v", err)
	}
	st, err := m.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]time.Time{}
	for _, s := range st {
		got[s.Queue] = s.PausedUntil
	}
	if !got["s"].Equal(until) || !got["d"].IsZero() {
		t.Errorf("PausedUntil = %v, want s until %v and d not paused", got, until)
	}
	ls, err := m.Lease(ctx, backend.LeaseRequest{Queues: []string{"s"}, Max: 1, WorkerID: "w", LeaseFor: time.Minute})
	if err != nil || len(ls) != 0 {
		t.Errorf("Lease on the paused routed queue = %d jobs, %v; want none", len(ls), err)
	}
}
