package redisqueue_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// BenchmarkTenantLimits measures no-op jobs processed per second by one
// worker at concurrency 100, with jobs spread over 50 tenants: without
// tenants (off), with tenants and no limits, with a limit of 5 each (room
// for 250: the limits cost but never bind), and with a limit of 1 each
// (room for 50: the limits bind, jobs wait and are released as slots
// free). The same cases as sqlitequeue's.
func BenchmarkTenantLimits(b *testing.B) {
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
			be := benchServer(b).backend(b, redisqueue.Options{})
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
func drain(b *testing.B, be queue.Backend, conc, n int) {
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

// BenchmarkNoisyNeighbour measures how long tenant B's jobs wait to start
// while tenant A's flood of 10,000 jobs is in the queue: B enqueues one
// job every 2ms (b.N of them) into a worker at concurrency 10 whose jobs
// take 500µs each. "fair": A and B are two tenants; "one tenant": B's jobs
// carry A's tenant, so nothing puts them ahead of the flood (a plain FIFO
// queue). It reports B's median and 99th-percentile wait from enqueue to
// start. The same method as sqlitequeue's.
func BenchmarkNoisyNeighbour(b *testing.B) {
	for _, c := range []struct{ name, tenantB string }{{"fair", "b"}, {"one tenant", "a"}} {
		b.Run(c.name, func(b *testing.B) {
			be := benchServer(b).backend(b, redisqueue.Options{})
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

// BenchmarkServerCPU measures the Redis server's CPU time per job (INFO
// cpu: used_cpu_user + used_cpu_sys) for enqueue (batches of 100), lease
// (100 per call) and complete (64 goroutines, merged), with jobs that have
// no tenant or group: the scheduler's cost on the fast path, free of the
// client's and the machine's scheduling noise. Run it against a Redis of
// its own (SLUICE_REDIS_URL): other clients' work counts too.
func BenchmarkServerCPU(b *testing.B) {
	s := benchServer(b)
	if s.mini != nil {
		b.Skip("needs real Redis: set SLUICE_REDIS_URL")
	}
	c := s.client(b)
	be := s.backendOn(b, c, redisqueue.Options{})
	cl := queue.NewClient(be)
	ctx := context.Background()
	n := b.N
	b.ResetTimer()
	cpu0 := serverCPU(b, c)
	specs := make([]queue.JobSpec, 100)
	for k := range specs {
		specs[k] = queue.JobSpec{Queue: "bench", Kind: "k"}
	}
	for i := 0; i < n; i += len(specs) {
		if _, err := cl.EnqueueBatch(ctx, specs[:min(len(specs), n-i)]); err != nil {
			b.Fatal(err)
		}
	}
	cpu1 := serverCPU(b, c)
	var ls []queue.Lease
	for len(ls) < n {
		l, err := be.Lease(ctx, queue.LeaseRequest{Queues: []string{"bench"}, WorkerID: "w", Max: 100, LeaseFor: time.Minute})
		if err != nil || len(l) == 0 {
			b.Fatalf("Lease = %d, %v", len(l), err)
		}
		ls = append(ls, l...)
	}
	cpu2 := serverCPU(b, c)
	var wg sync.WaitGroup
	for g := 0; g < 64; g++ {
		wg.Go(func() {
			for j := g; j < len(ls); j += 64 {
				if err := be.Complete(ctx, ls[j].Job.ID, ls[j].Token, nil); err != nil {
					b.Error(err)
				}
			}
		})
	}
	wg.Wait()
	cpu3 := serverCPU(b, c)
	per := func(d float64) float64 { return d * 1e6 / float64(n) }
	b.ReportMetric(per(cpu1-cpu0), "enqueue-cpu-µs/job")
	b.ReportMetric(per(cpu2-cpu1), "lease-cpu-µs/job")
	b.ReportMetric(per(cpu3-cpu2), "complete-cpu-µs/job")
}

// serverCPU returns the CPU seconds the Redis server has used.
func serverCPU(b *testing.B, c *redis.Client) float64 {
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	total := 0.0
	for _, l := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return total
}
