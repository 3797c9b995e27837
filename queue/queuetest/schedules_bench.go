package queuetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// BenchTickToStart measures a schedule's tick-to-start latency on a fresh
// backend from open: the wall time from the moment a tick comes (a fake
// clock moved to it, which wakes the Scheduler's timer) to the moment a
// Worker's handler starts the tick's job. It covers the scheduler's wake,
// its read of the schedules, the claim, the enqueue and the record, the
// worker's wake (the backend's notification, else its poll) and the lease.
// Timer lateness of a real clock is left out. It reports p50 and p99 in
// microseconds. The backend, scheduler and worker run in this process.
func BenchTickToStart(b *testing.B, open func(b *testing.B, clk clock.Clock) backend.Backend) {
	clk := clock.NewFake(Epoch)
	be := open(b, clk)
	c := queue.NewClient(be)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := c.SetSchedule(ctx, queue.Schedule{Name: "bench", Every: time.Minute, Job: queue.JobSpec{Queue: "bench-tick", Kind: "tick"}}); err != nil {
		b.Fatal(err)
	}
	started := make(chan time.Time, 1)
	w := queue.NewWorker(be, queue.WorkerConfig{Queues: []string{"bench-tick"}, Concurrency: 1, PollInterval: 5 * time.Millisecond})
	w.Handle("tick", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		started <- time.Now()
		return nil, nil
	}))
	s := queue.NewScheduler(c, queue.SchedulerConfig{Clock: clk, Poll: time.Hour})
	done := make(chan struct{}, 2)
	go func() { _ = w.Run(ctx); done <- struct{}{} }()
	go func() { _ = s.Run(ctx); done <- struct{}{} }()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		clk.BlockUntil(1) // the scheduler waits for the tick
		t0 := time.Now()
		clk.Advance(time.Minute)
		lat = append(lat, (<-started).Sub(t0))
	}
	b.StopTimer()
	cancel()
	<-done
	<-done
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
