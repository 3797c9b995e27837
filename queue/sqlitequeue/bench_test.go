package sqlitequeue_test

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

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

func BenchmarkEnqueue(b *testing.B) {
	be := open(b, nil)
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
	be := open(b, nil)
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

// BenchmarkLeaseComplete measures one job's way through the backend: lease
// one, complete it (two transactions).
func BenchmarkLeaseComplete(b *testing.B) {
	leaseComplete(b, open(b, nil))
}

// BenchmarkLeaseBatchComplete leases 16 jobs per call and completes each,
// as a busy worker does.
func BenchmarkLeaseBatchComplete(b *testing.B) {
	be := open(b, nil)
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
			be := open(b, nil)
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
	be := open(b, nil)
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

// BenchmarkListFiltered reads one page of 100 jobs of one tenant, newest
// first, from 20,000 jobs of 10 tenants: the cost of a page of the
// dashboard's filtered jobs view.
func BenchmarkListFiltered(b *testing.B) {
	be := open(b, nil)
	c := queue.NewClient(be)
	ctx := context.Background()
	specs := make([]queue.JobSpec, 1000)
	for n := range 20 {
		for i := range specs {
			specs[i] = queue.JobSpec{Queue: "bench", Kind: "noop", Tenant: fmt.Sprintf("t%d", (n*len(specs)+i)%10)}
		}
		if _, err := c.EnqueueBatch(ctx, specs); err != nil {
			b.Fatal(err)
		}
	}
	f := queue.ListFilter{Tenant: "t3", Kind: "noop", Order: queue.NewestFirst, Limit: 100}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p, err := c.List(ctx, f)
		if err != nil || len(p.Jobs) != 100 {
			b.Fatalf("List = %d jobs, %v", len(p.Jobs), err)
		}
	}
}

// BenchmarkRetryCancel measures the retry transition: each op retries a
// cancelled job (back to pending through the scheduler) and cancels it
// again, two transactions.
func BenchmarkRetryCancel(b *testing.B) {
	be := open(b, nil)
	c := queue.NewClient(be)
	ctx := context.Background()
	j, err := c.Enqueue(ctx, queue.JobSpec{Queue: "bench", Kind: "noop", Tenant: "acme"})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Cancel(ctx, j.ID); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Retry(ctx, j.ID); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Cancel(ctx, j.ID); err != nil {
			b.Fatal(err)
		}
	}
}
