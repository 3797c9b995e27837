package queuetest

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// ConcurrencyJobs is how many jobs the concurrency test runs in the full
// matrix (SLUICE_TEST_FULL=1) without the race detector: 10,000. Otherwise
// it runs 2,000, which checks the same interleavings at a fraction of the
// volume.
const ConcurrencyJobs = 10000

// testConcurrency runs 4 workers × concurrency 16 over 10,000 jobs on the
// real clock: every job must complete exactly once, none lost, none left
// active.
func testConcurrency(t *testing.T, f Factory) {
	n := testutil.Size(2000, ConcurrencyJobs)
	b := f(t, clock.Real)
	ctx := context.Background()
	c := queue.NewClient(b)
	// Mixed priorities where the backend has them, so that leases take
	// jobs out of enqueue order; the rest of the test needs nothing.
	prios := 1
	if backend.CommonCapabilities(b).Has(queue.CapPriority) {
		prios = 3
	}
	ids := make(map[string]bool, n)
	batch := make([]queue.JobSpec, 0, 500)
	for i := 0; i < n; i++ {
		batch = append(batch, queue.JobSpec{Queue: QueueC, Kind: "k", Payload: []byte(strconv.Itoa(i)), Priority: i % prios})
		if len(batch) == cap(batch) || i == n-1 {
			res, err := c.EnqueueBatch(ctx, batch)
			if err != nil {
				t.Fatalf("EnqueueBatch: %v", err)
			}
			for _, r := range res {
				ids[r.Job.ID] = true
			}
			batch = batch[:0]
		}
	}
	if len(ids) != n {
		t.Fatalf("enqueued %d distinct ids, want %d", len(ids), n)
	}

	var runs sync.Map // id → *atomic.Int32
	var done atomic.Int64
	all := make(chan struct{})
	handler := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		v, _ := runs.LoadOrStore(j.ID, new(atomic.Int32))
		v.(*atomic.Int32).Add(1)
		if done.Add(1) == int64(n) {
			close(all)
		}
		return nil, nil
	})
	var stops []func()
	for w := 0; w < 4; w++ {
		wk := queue.NewWorker(b, queue.WorkerConfig{
			Queues: []string{QueueC}, Concurrency: 16, PollInterval: 10 * time.Millisecond, Logger: quiet,
		})
		wk.Handle("k", handler)
		stops = append(stops, testutil.Start(t, wk))
	}
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		t.Fatalf("only %d of %d jobs ran", done.Load(), n)
	}
	for _, stop := range stops {
		stop()
	}
	st, err := c.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []queue.State{queue.StateActive, queue.StatePending, queue.StateRetrying, queue.StateFailed} {
		if got := count(st, QueueC, s); got != 0 {
			t.Errorf("%d jobs %s after the run, want 0", got, s)
		}
	}
	if got := count(st, QueueC, queue.StateCompleted); got != int64(n) {
		t.Errorf("%d jobs completed, want %d", got, n)
	}
	twice := 0
	for id := range ids {
		v, ok := runs.Load(id)
		if !ok {
			t.Errorf("job %s never ran", id)
			continue
		}
		if k := v.(*atomic.Int32).Load(); k != 1 {
			twice++
			if twice < 5 {
				t.Errorf("job %s ran %d times, want once", id, k)
			}
		}
	}
	if twice > 0 {
		t.Errorf("%d jobs ran more than once", twice)
	}
}
