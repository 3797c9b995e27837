package sqlitequeue_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// BenchmarkCompleteOutbox measures what recording events costs a job's
// way through the backend (lease one, complete it), with the outbox off
// and on. The difference is one INSERT ... SELECT inside Complete's
// transaction.
func BenchmarkCompleteOutbox(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			be, err := sqlitequeue.Open(b.TempDir()+"/q.db", sqlitequeue.Options{Outbox: on})
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			leaseComplete(b, be)
		})
	}
}

// leaseComplete leases one job and completes it per op, refilling the
// queue a thousand jobs at a time outside the timer.
func leaseComplete(b *testing.B, be *sqlitequeue.Backend) {
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
