package queue_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// lateLease models a store whose lease call, once sent, runs to the end
// in the store even when its caller's context ends under it (a Postgres
// statement, a Redis script): the jobs are taken, and the caller sees only
// its context's error. Its first call waits for the test's go-ahead.
type lateLease struct {
	backend.Backend
	entered, release chan struct{}
	calls            atomic.Int64
}

func (l *lateLease) Lease(ctx context.Context, req backend.LeaseRequest) ([]queue.Lease, error) {
	if l.calls.Add(1) == 1 {
		close(l.entered)
		<-l.release
	}
	ls, err := l.Backend.Lease(context.WithoutCancel(ctx), req)
	if err == nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return ls, err
}

// A worker stopped while a lease call is under way lets the call finish
// and gives its jobs straight back: none is left active with no one to run
// it until its lease expires.
func TestWorkerStopDuringLeaseGivesJobsBack(t *testing.T) {
	store, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlitequeue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	b := &lateLease{Backend: store, entered: make(chan struct{}), release: make(chan struct{})}
	ctx := context.Background()
	job, err := queue.NewClient(b).Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k"})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	w := queue.NewWorker(b, queue.WorkerConfig{Queues: []string{"q"}, LeaseFor: time.Hour, PollInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	w.Handle("k", queue.HandlerFunc(func(context.Context, *queue.Job) ([]byte, error) {
		runs.Add(1)
		return nil, nil
	}))
	runCtx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- w.Run(runCtx) }()
	<-b.entered
	cancel() // the stop lands while the store is leasing
	close(b.release)
	if err := <-errc; err != nil {
		t.Fatalf("Run: %v", err)
	}

	got, err := store.Get(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != queue.StatePending || got.Attempt != 0 || runs.Load() != 0 {
		t.Fatalf("after the stop: state %s, attempt %d, %d runs; want pending, 0, 0", got.State, got.Attempt, runs.Load())
	}
}
