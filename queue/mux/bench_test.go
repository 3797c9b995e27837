package mux_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/mux"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// BenchmarkRoundTrip enqueues, leases and completes one job per op on
// SQLite, straight and through a router (the job on the routed backend,
// so ids are rewritten both ways): the router's cost per job.
func BenchmarkRoundTrip(b *testing.B) {
	for _, via := range []string{"direct", "router"} {
		b.Run(via, func(b *testing.B) {
			var be backend.Backend = openSQLite(b, clock.Real, sqlitequeue.Options{})
			if via == "router" {
				be = newMux(b, openSQLite(b, clock.Real, sqlitequeue.Options{}), mux.Route{Name: "lane", Backend: be, Queues: []string{"q"}})
			}
			ctx := context.Background()
			spec := []queue.JobSpec{{Queue: "q", Kind: "k", MaxAttempts: 1}}
			req := backend.LeaseRequest{Queues: []string{"q"}, WorkerID: "w", Max: 1, LeaseFor: time.Minute}
			b.ResetTimer()
			for range b.N {
				if _, err := be.Enqueue(ctx, spec); err != nil {
					b.Fatal(err)
				}
				ls, err := be.Lease(ctx, req)
				if err != nil || len(ls) != 1 {
					b.Fatalf("Lease = %d, %v", len(ls), err)
				}
				if err := be.Complete(ctx, ls[0].Job.ID, ls[0].Token, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLeaseTwoBackends leases from two queues on two backends in one
// call, one job ready on each, against the same two leases made straight.
func BenchmarkLeaseTwoBackends(b *testing.B) {
	ctx := context.Background()
	a, c := openSQLite(b, clock.Real, sqlitequeue.Options{}), openSQLite(b, clock.Real, sqlitequeue.Options{})
	m := newMux(b, a, mux.Route{Name: "lane", Backend: c, Queues: []string{"fast"}})
	specs := []queue.JobSpec{{Queue: "slow", Kind: "k", MaxAttempts: 1}, {Queue: "fast", Kind: "k", MaxAttempts: 1}}
	b.Run("router", func(b *testing.B) {
		req := backend.LeaseRequest{Queues: []string{"slow", "fast"}, WorkerID: "w", Max: 2, LeaseFor: time.Minute}
		for range b.N {
			b.StopTimer()
			if _, err := m.Enqueue(ctx, specs); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if ls, err := m.Lease(ctx, req); err != nil || len(ls) != 2 {
				b.Fatalf("Lease = %d, %v", len(ls), err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			if _, err := m.Enqueue(ctx, specs); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			for _, x := range []struct {
				be backend.Backend
				q  string
			}{{a, "slow"}, {c, "fast"}} {
				if ls, err := x.be.Lease(ctx, backend.LeaseRequest{Queues: []string{x.q}, WorkerID: "w", Max: 1, LeaseFor: time.Minute}); err != nil || len(ls) != 1 {
					b.Fatalf("Lease = %d, %v", len(ls), err)
				}
			}
		}
	})
}
