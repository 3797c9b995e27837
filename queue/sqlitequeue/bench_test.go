package sqlitequeue_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
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
	be := open(b, nil)
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
		ls, err := be.Lease(ctx, queue.LeaseRequest{Queues: []string{"bench"}, WorkerID: "b", Max: 1, LeaseFor: time.Minute})
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
		ls, err := be.Lease(ctx, queue.LeaseRequest{Queues: []string{"bench"}, WorkerID: "b", Max: 16, LeaseFor: time.Minute})
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
