package redisqueue_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// BenchmarkTenantLimits: queuetest.BenchTenantLimits on this backend
// (jobs/s with tenants off, on, and with limits that do and do not bind).
func BenchmarkTenantLimits(b *testing.B) {
	queuetest.BenchTenantLimits(b, func(b *testing.B) backend.Backend { return benchServer(b).backend(b, redisqueue.Options{}) })
}

// BenchmarkNoisyNeighbour: queuetest.BenchNoisyNeighbour on this backend
// (tenant B's wait to start under tenant A's flood of 10,000 jobs).
func BenchmarkNoisyNeighbour(b *testing.B) {
	queuetest.BenchNoisyNeighbour(b, func(b *testing.B) backend.Backend { return benchServer(b).backend(b, redisqueue.Options{}) })
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
		l, err := be.Lease(ctx, backend.LeaseRequest{Queues: []string{"bench"}, WorkerID: "w", Max: 100, LeaseFor: time.Minute})
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

// BenchmarkTickToStart: queuetest.BenchTickToStart on this backend (wall
// time from a schedule's tick to its job's handler starting).
func BenchmarkTickToStart(b *testing.B) {
	queuetest.BenchTickToStart(b, func(b *testing.B, clk clock.Clock) backend.Backend {
		return benchServer(b).backend(b, redisqueue.Options{Clock: clk})
	})
}
