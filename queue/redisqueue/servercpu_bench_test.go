package redisqueue_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// BenchmarkServerCPUSmallCalls is BenchmarkServerCPU with the small calls
// of a worker at low concurrency, where a script's fixed cost per run is
// paid by few jobs: 10 goroutines enqueue one job per call, then 10
// goroutines each lease up to 4 jobs per call and complete them one by
// one. It reports the Redis server's CPU time per job for the two phases
// (jobs without tenant or group). Run it against a Redis of its own.
func BenchmarkServerCPUSmallCalls(b *testing.B) {
	s := benchServer(b)
	if s.mini != nil {
		b.Skip("needs real Redis: set SLUICE_REDIS_URL")
	}
	c := s.client(b)
	be := s.backendOn(b, c, redisqueue.Options{})
	cl := queue.NewClient(be)
	ctx := context.Background()
	const workers = 10
	n := b.N
	b.ResetTimer()
	cpu0 := serverCPU(b, c)
	var wg sync.WaitGroup
	for g := 0; g < workers; g++ {
		wg.Go(func() {
			for j := g; j < n; j += workers {
				if _, err := cl.Enqueue(ctx, queue.JobSpec{Queue: "bench", Kind: "k"}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	cpu1 := serverCPU(b, c)
	var mu sync.Mutex
	done := 0
	for g := 0; g < workers; g++ {
		wg.Go(func() {
			for {
				mu.Lock()
				if done >= n {
					mu.Unlock()
					return
				}
				mu.Unlock()
				ls, err := be.Lease(ctx, backend.LeaseRequest{Queues: []string{"bench"}, WorkerID: "w", Max: 4, LeaseFor: time.Minute})
				if err != nil {
					b.Error(err)
					return
				}
				for _, l := range ls {
					if err := be.Complete(ctx, l.Job.ID, l.Token, nil); err != nil {
						b.Error(err)
						return
					}
				}
				mu.Lock()
				done += len(ls)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	cpu2 := serverCPU(b, c)
	per := func(d float64) float64 { return d * 1e6 / float64(n) }
	b.ReportMetric(per(cpu1-cpu0), "enqueue1-cpu-µs/job")
	b.ReportMetric(per(cpu2-cpu1), "process-cpu-µs/job")
}
