package sqlitequeue_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// BenchmarkTenantLimits: queuetest.BenchTenantLimits on this backend
// (jobs/s with tenants off, on, and with limits that do and do not bind).
func BenchmarkTenantLimits(b *testing.B) {
	queuetest.BenchTenantLimits(b, func(b *testing.B) backend.Backend { return open(b, nil) })
}

// BenchmarkNoisyNeighbour: queuetest.BenchNoisyNeighbour on this backend
// (tenant B's wait to start under tenant A's flood of 10,000 jobs).
func BenchmarkNoisyNeighbour(b *testing.B) {
	queuetest.BenchNoisyNeighbour(b, func(b *testing.B) backend.Backend { return open(b, nil) })
}

// BenchmarkLeaseTenants measures Lease+Complete of one job (like
// BenchmarkLeaseComplete) when the queue holds ready jobs of many tenants
// and a limited tenant's flood waits: the cost of the fair order and the
// limit check per job.
func BenchmarkLeaseTenants(b *testing.B) {
	be := open(b, nil)
	cl := queue.NewClient(be)
	ctx := context.Background()
	if err := cl.SetTenant(ctx, "flood", queue.TenantConfig{Limit: 1}); err != nil {
		b.Fatal(err)
	}
	specs := make([]queue.JobSpec, 1000)
	for i := range specs {
		specs[i] = queue.JobSpec{Queue: "bench", Kind: "noop", Tenant: fmt.Sprintf("t%d", i%100)}
	}
	flood := make([]queue.JobSpec, 1000)
	for i := range flood {
		flood[i] = queue.JobSpec{Queue: "bench", Kind: "noop", Tenant: "flood"}
	}
	if _, err := cl.EnqueueBatch(ctx, flood); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	left := 0
	for b.Loop() {
		if left == 0 {
			b.StopTimer()
			if _, err := cl.EnqueueBatch(ctx, specs); err != nil {
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
		if ls[0].Job.Tenant != "flood" {
			left--
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkTickToStart: queuetest.BenchTickToStart on this backend (wall
// time from a schedule's tick to its job's handler starting).
func BenchmarkTickToStart(b *testing.B) {
	queuetest.BenchTickToStart(b, func(b *testing.B, clk clock.Clock) backend.Backend {
		be, err := sqlitequeue.Open(filepath.Join(b.TempDir(), "q.db"), sqlitequeue.Options{Clock: clk})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { be.Close() })
		return be
	})
}
