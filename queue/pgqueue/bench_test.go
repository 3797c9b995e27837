package pgqueue_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/pgqueue"
	"github.com/sluicehq/sluice/queue/queuetest"
)

// benchConns is the pool size of the benchmarks' stores: enough for a
// worker at concurrency 100 whose handlers finish at once.
const benchConns = 20

// openBench opens a store for a benchmark, in a fresh schema.
func openBench(b *testing.B) *pgqueue.Store {
	b.Helper()
	url := pgtest.URL(b)
	s, err := pgqueue.Open(context.Background(), url, pgqueue.Options{Schema: pgtest.Schema(b, url), MaxConns: benchConns})
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func BenchmarkEnqueue(b *testing.B) {
	be := openBench(b)
	c := queue.NewClient(be)
	ctx := context.Background()
	s := queue.JobSpec{Queue: "bench", Kind: "noop", Payload: []byte(`{"n":1}`)}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Enqueue(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

func BenchmarkEnqueueBatch100(b *testing.B) {
	be := openBench(b)
	c := queue.NewClient(be)
	ctx := context.Background()
	specs := make([]queue.JobSpec, 100)
	for i := range specs {
		specs[i] = queue.JobSpec{Queue: "bench", Kind: "noop", Payload: []byte(`{"n":1}`)}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.EnqueueBatch(ctx, specs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(specs))/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkTenantLimits: queuetest.BenchTenantLimits on this backend
// (Lease+Complete through the scheduler, with tenants and limits).
func BenchmarkTenantLimits(b *testing.B) {
	queuetest.BenchTenantLimits(b, func(b *testing.B) backend.Backend { return openBench(b) })
}

// BenchmarkLeaseComplete measures one job's way through the backend: lease
// one, complete it (two transactions).
func BenchmarkLeaseComplete(b *testing.B) {
	leaseComplete(b, openBench(b))
}

// BenchmarkLeaseBatchComplete leases 16 jobs per call and completes each,
// as a busy worker does.
func BenchmarkLeaseBatchComplete(b *testing.B) {
	be := openBench(b)
	c := queue.NewClient(be)
	ctx := context.Background()
	specs := make([]queue.JobSpec, 1600)
	for i := range specs {
		specs[i] = queue.JobSpec{Queue: "bench", Kind: "noop"}
	}
	b.ReportAllocs()
	b.ResetTimer()
	left := 0
	for b.Loop() {
		if left == 0 {
			b.StopTimer()
			if _, err := c.EnqueueBatch(ctx, specs); err != nil {
				b.Fatal(err)
			}
			left = len(specs)
			b.StartTimer()
		}
		ls, err := be.Lease(ctx, backend.LeaseRequest{Queues: []string{"bench"}, WorkerID: "b", Max: 16, LeaseFor: time.Minute})
		if err != nil || len(ls) != 16 {
			b.Fatalf("Lease = %d, %v", len(ls), err)
		}
		for _, l := range ls {
			if err := be.Complete(ctx, l.Job.ID, l.Token, nil); err != nil {
				b.Fatal(err)
			}
		}
		left -= 16
	}
	b.ReportMetric(float64(b.N*16)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkProcess measures no-op jobs processed per second by one worker
// at concurrency 10 and 100: b.N jobs are enqueued first (not timed), then
// the worker drains them.
func BenchmarkProcess(b *testing.B) {
	for _, conc := range []int{10, 100} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			be := openBench(b)
			ctx := context.Background()
			fill(b, be, b.N)
			var done atomic.Int64
			all := make(chan struct{})
			w := queue.NewWorker(be, queue.WorkerConfig{Queues: []string{"bench"}, Concurrency: conc, Logger: quietLog})
			w.Handle("noop", queue.HandlerFunc(func(context.Context, *queue.Job) ([]byte, error) {
				if done.Add(1) == int64(b.N) {
					close(all)
				}
				return nil, nil
			}))
			b.ResetTimer()
			runCtx, stop := context.WithCancel(ctx)
			stopped := make(chan error)
			go func() { stopped <- w.Run(runCtx) }()
			<-all
			b.StopTimer()
			stop()
			<-stopped
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// BenchmarkEnqueueToStart measures the time from calling Enqueue to the
// handler starting, with a producer enqueuing one job at a time at a steady
// pace (one every 500µs, about 2,000 jobs/s) into a worker at concurrency
// 10; it reports the median and the 99th percentile. The worker learns of
// new jobs from the backend's in-process notifications.
func BenchmarkEnqueueToStart(b *testing.B) {
	be := openBench(b)
	c := queue.NewClient(be)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	sent := make([]time.Time, b.N)
	lat := make([]time.Duration, b.N)
	var started atomic.Int64
	all := make(chan struct{})
	w := queue.NewWorker(be, queue.WorkerConfig{Queues: []string{"bench"}, Concurrency: 10, Logger: quietLog})
	w.Handle("noop", queue.HandlerFunc(func(_ context.Context, j *queue.Job) ([]byte, error) {
		now := time.Now()
		i, _ := strconv.Atoi(string(j.Payload))
		lat[i] = now.Sub(sent[i])
		if started.Add(1) == int64(b.N) {
			close(all)
		}
		return nil, nil
	}))
	stopped := make(chan error)
	go func() { stopped <- w.Run(ctx) }()
	b.ResetTimer()
	tick := time.NewTicker(500 * time.Microsecond)
	defer tick.Stop()
	for i := 0; i < b.N; i++ {
		<-tick.C
		sent[i] = time.Now()
		if _, err := c.Enqueue(ctx, queue.JobSpec{Queue: "bench", Kind: "noop", Payload: []byte(strconv.Itoa(i))}); err != nil {
			b.Fatal(err)
		}
	}
	<-all
	b.StopTimer()
	stop()
	<-stopped
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// fill enqueues n no-op jobs in batches.
func fill(b *testing.B, be backend.Backend, n int) {
	b.Helper()
	c := queue.NewClient(be)
	batch := make([]queue.JobSpec, 0, 1000)
	for i := 0; i < n; i++ {
		batch = append(batch, queue.JobSpec{Queue: "bench", Kind: "noop"})
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := c.EnqueueBatch(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// leaseComplete leases one job and completes it per op, refilling the
// queue a thousand jobs at a time outside the timer.
func leaseComplete(b *testing.B, be *pgqueue.Store) {
	c := queue.NewClient(be)
	ctx := context.Background()
	specs := make([]queue.JobSpec, 1000)
	for i := range specs {
		specs[i] = queue.JobSpec{Queue: "bench", Kind: "noop"}
	}
	b.ReportAllocs()
	b.ResetTimer()
	left := 0
	for b.Loop() {
		if left == 0 {
			b.StopTimer()
			if _, err := c.EnqueueBatch(ctx, specs); err != nil {
				b.Fatal(err)
			}
			left = len(specs)
			b.StartTimer()
		}
		ls, err := be.Lease(ctx, backend.LeaseRequest{Queues: []string{"bench"}, WorkerID: "b", Max: 1, LeaseFor: time.Minute})
		if err != nil || len(ls) != 1 {
			b.Fatalf("Lease = %d, %v", len(ls), err)
		}
		if err := be.Complete(ctx, ls[0].Job.ID, ls[0].Token, nil); err != nil {
			b.Fatal(err)
		}
		left--
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}
