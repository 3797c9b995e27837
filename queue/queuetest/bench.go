package queuetest

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// The tenant scheduler's benchmarks, shared by every backend with
// CapTenants so that their figures compare: a backend's Benchmark*
// function calls them with a function opening a fresh backend.

// BenchTenantLimits measures no-op jobs processed per second by one
// worker at concurrency 100 on a fresh backend from open, with jobs spread over
// 50 tenants: without tenants (off), with tenants and no limits, with a
// limit of 5 each (room for 250: the limits cost but never bind), and with
// a limit of 1 each (room for 50: the limits bind, jobs wait and are
// released as slots free).
func BenchTenantLimits(b *testing.B, open func(b *testing.B) backend.Backend) {
	cases := []struct {
		name    string
		tenants bool
		limit   int
	}{
		{"off", false, 0},
		{"tenants", true, 0},
		{"limit=5", true, 5},
		{"limit=1", true, 1},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			be := open(b)
			ctx := context.Background()
			cl := queue.NewClient(be)
			if c.limit > 0 {
				if err := cl.SetTenantDefaults(ctx, queue.TenantConfig{Limit: c.limit}); err != nil {
					b.Fatal(err)
				}
			}
			batch := make([]queue.JobSpec, 0, 1000)
			for i := 0; i < b.N; i++ {
				s := queue.JobSpec{Queue: "bench", Kind: "noop"}
				if c.tenants {
					s.Tenant = "t" + strconv.Itoa(i%50)
				}
				batch = append(batch, s)
				if len(batch) == cap(batch) || i == b.N-1 {
					if _, err := cl.EnqueueBatch(ctx, batch); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
			}
			b.ResetTimer()
			drain(b, be, 100, b.N)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// drain runs one worker at concurrency conc until n jobs have run.
func drain(b *testing.B, be backend.Backend, conc, n int) {
	var done atomic.Int64
	all := make(chan struct{})
	w := queue.NewWorker(be, queue.WorkerConfig{Queues: []string{"bench"}, Concurrency: conc, Logger: quiet})
	w.Handle("noop", queue.HandlerFunc(func(context.Context, *queue.Job) ([]byte, error) {
		if done.Add(1) == int64(n) {
			close(all)
		}
		return nil, nil
	}))
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- w.Run(ctx) }()
	<-all
	b.StopTimer()
	stop()
	<-stopped
}

// BenchNoisyNeighbour measures how long tenant B's jobs wait to start
// while tenant A's flood of 10,000 jobs is in the queue: B enqueues one
// job every 2ms (b.N of them) into a worker at concurrency 10 whose jobs
// take 500µs each. "fair": A and B are two tenants; "one tenant": B's jobs
// carry A's tenant, so nothing puts them ahead of the flood (a plain FIFO
// queue). It reports B's median and 99th-percentile wait from enqueue to
// start.
func BenchNoisyNeighbour(b *testing.B, open func(b *testing.B) backend.Backend) {
	for _, c := range []struct{ name, tenantB string }{{"fair", "b"}, {"one tenant", "a"}} {
		b.Run(c.name, func(b *testing.B) {
			be := open(b)
			cl := queue.NewClient(be)
			ctx := context.Background()
			flood := make([]queue.JobSpec, 500)
			for i := range flood {
				flood[i] = queue.JobSpec{Queue: "bench", Kind: "work", Tenant: "a", Payload: []byte("-1")}
			}
			for i := 0; i < 20; i++ {
				if _, err := cl.EnqueueBatch(ctx, flood); err != nil {
					b.Fatal(err)
				}
			}
			sent := make([]time.Time, b.N)
			waits := make([]time.Duration, b.N)
			var mu sync.Mutex
			var left atomic.Int64
			left.Store(int64(b.N))
			all := make(chan struct{})
			w := queue.NewWorker(be, queue.WorkerConfig{Queues: []string{"bench"}, Concurrency: 10, Logger: quiet})
			w.Handle("work", queue.HandlerFunc(func(_ context.Context, j *queue.Job) ([]byte, error) {
				if i, _ := strconv.Atoi(string(j.Payload)); i >= 0 {
					mu.Lock()
					waits[i] = time.Since(sent[i])
					mu.Unlock()
					if left.Add(-1) == 0 {
						close(all)
					}
				}
				t := time.NewTimer(500 * time.Microsecond)
				<-t.C
				return nil, nil
			}))
			runCtx, stop := context.WithCancel(ctx)
			stopped := make(chan error)
			go func() { stopped <- w.Run(runCtx) }()
			b.ResetTimer()
			tick := time.NewTicker(2 * time.Millisecond)
			for i := 0; i < b.N; i++ {
				<-tick.C
				mu.Lock()
				sent[i] = time.Now()
				mu.Unlock()
				if _, err := cl.Enqueue(ctx, queue.JobSpec{Queue: "bench", Kind: "work", Tenant: c.tenantB, Payload: []byte(strconv.Itoa(i))}); err != nil {
					b.Fatal(err)
				}
			}
			tick.Stop()
			<-all
			b.StopTimer()
			stop()
			<-stopped
			slices.Sort(waits)
			b.ReportMetric(float64(waits[len(waits)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(waits[len(waits)*99/100].Microseconds()), "p99-µs")
		})
	}
}
