package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

// TestStartRatesAdmit: a job leased outside a Worker is counted against
// its tenant's start rate; over it, the job is given back and the tenant
// paused.
func TestStartRatesAdmit(t *testing.T) {
	b, done := openExample()
	defer done()
	store := memlimit.New(memlimit.Options{})
	defer store.Close()
	ctx := context.Background()
	c := queue.NewClient(b)
	for range 2 {
		if _, err := c.Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k", Tenant: "acme"}); err != nil {
			t.Fatal(err)
		}
	}
	rates := queue.StartRates{Store: store, Tenant: ratelimit.Per(1, time.Hour)}
	leases, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, WorkerID: "w", Max: 2, LeaseFor: time.Minute})
	if err != nil || len(leases) != 2 {
		t.Fatalf("lease: %d %v", len(leases), err)
	}
	var got []bool
	for _, l := range leases {
		got = append(got, rates.Admit(ctx, b, l, nil))
	}
	if !got[0] || got[1] {
		t.Fatalf("Admit = %v, want [true false]", got)
	}
	j, err := c.Get(ctx, leases[1].Job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != queue.StatePending && j.State != queue.StateWaiting {
		t.Errorf("job over the rate: state %s, want given back (pending or waiting)", j.State)
	}
	info, err := c.Tenant(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if info.PausedUntil.IsZero() {
		t.Error("tenant over its start rate not paused")
	}
}
