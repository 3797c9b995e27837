package redisqueue_test

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// benchServer is real Redis when SLUICE_REDIS_URL is set, else miniredis
// (whose figures say little about Redis itself).
func benchServer(b *testing.B) server {
	if os.Getenv("SLUICE_REDIS_URL") != "" {
		return realServer(b)
	}
	return miniServer(b)
}

// BenchmarkEnqueue enqueues one job per call from parallel goroutines;
// concurrent calls meet in the batcher and go out merged.
func BenchmarkEnqueue(b *testing.B) {
	be := benchServer(b).backend(b, redisqueue.Options{})
	cl := queue.NewClient(be)
	ctx := context.Background()
	b.SetParallelism(8)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := cl.Enqueue(ctx, queue.JobSpec{Queue: "bench", Kind: "k", Payload: []byte("x")}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkLeaseComplete leases jobs in batches of 100 and completes them
// from 100 goroutines, as a worker at concurrency 100 does; ns/op is per
// job.
func BenchmarkLeaseComplete(b *testing.B) {
	be := benchServer(b).backend(b, redisqueue.Options{})
	cl := queue.NewClient(be)
	ctx := context.Background()
	for i := 0; i < b.N; i += 500 {
		specs := make([]queue.JobSpec, min(500, b.N-i))
		for k := range specs {
			specs[k] = queue.JobSpec{Queue: "bench", Kind: "k"}
		}
		if _, err := cl.EnqueueBatch(ctx, specs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		ls, err := be.Lease(ctx, backend.LeaseRequest{Queues: []string{"bench"}, WorkerID: "w", Max: 100, LeaseFor: time.Minute})
		if err != nil || len(ls) == 0 {
			b.Fatalf("Lease = %d, %v", len(ls), err)
		}
		var wg sync.WaitGroup
		for _, l := range ls {
			wg.Go(func() {
				if err := be.Complete(ctx, l.Job.ID, l.Token, nil); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		done += len(ls)
	}
}

// BenchmarkListFilteredRare reads pages of a tenant that owns one job in
// a thousand of a 20,000-job queue: each call looks at no more than the
// scan budget (1,000 jobs by default) and returns a short page with a cursor, so
// ns/op is the cost of one bounded call, the longest a filtered listing
// holds Redis.
func BenchmarkListFilteredRare(b *testing.B) {
	be := benchServer(b).backend(b, redisqueue.Options{})
	cl := queue.NewClient(be)
	ctx := context.Background()
	specs := make([]queue.JobSpec, 1000)
	for n := range 20 {
		for i := range specs {
			tenant := "busy"
			if (n*len(specs)+i)%1000 == 0 {
				tenant = "rare"
			}
			specs[i] = queue.JobSpec{Queue: "bench", Kind: "k", Tenant: tenant}
		}
		if _, err := cl.EnqueueBatch(ctx, specs); err != nil {
			b.Fatal(err)
		}
	}
	if n, err := strconv.Atoi(os.Getenv("BUDGET")); err == nil {
		defer redisqueue.SetListBudget(n)()
	}
	f := queue.ListFilter{Queue: "bench", Tenant: "rare", Order: queue.NewestFirst, Limit: 50}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p, err := cl.List(ctx, f)
		if err != nil {
			b.Fatal(err)
		}
		f.Cursor = p.Next
	}
}

// BenchmarkRetryCancel measures the retry script: each op retries a
// cancelled job (back to pending) and cancels it again, two scripts, one
// caller (so batching only adds its wait).
func BenchmarkRetryCancel(b *testing.B) {
	for _, m := range []struct {
		name string
		opts redisqueue.Options
	}{{"batched", redisqueue.Options{}}, {"unbatched", redisqueue.Options{DisableBatching: true}}} {
		b.Run(m.name, func(b *testing.B) {
			be := benchServer(b).backend(b, m.opts)
			cl := queue.NewClient(be)
			ctx := context.Background()
			j, err := cl.Enqueue(ctx, queue.JobSpec{Queue: "bench", Kind: "k", UniqueKey: "once"})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := cl.Cancel(ctx, j.ID); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cl.Retry(ctx, j.ID); err != nil {
					b.Fatal(err)
				}
				if _, err := cl.Cancel(ctx, j.ID); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
