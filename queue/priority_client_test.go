package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

// TestClientPriority enqueues through a client whose priorities come from
// the tenant's load, counted in a memlimit store on a fake clock.
func TestClientPriority(t *testing.T) {
	t.Parallel()
	b, done := openExample()
	defer done()
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	store := memlimit.New(memlimit.Options{Clock: clk, SweepInterval: -1})
	defer store.Close()
	c := queue.NewClient(b, queue.ClientConfig{Priority: queue.PriorityConfig{
		Func: queue.LoadPriority(10, func(string) queue.Tier { return queue.TierFree }),
		Load: store,
	}})
	ctx := context.Background()
	var last *queue.Job
	for i := 0; i < 60; i++ {
		j, err := c.Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k", Tenant: "acme"})
		if err != nil {
			t.Fatal(err)
		}
		if i == 24 && j.Priority != 10 {
			t.Errorf("25th job priority = %d, want 10", j.Priority)
		}
		last = j
	}
	if last.Priority != 28 {
		t.Errorf("60th job priority = %d, want 28", last.Priority)
	}
	other, err := c.Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k", Tenant: "calm"})
	if err != nil || other.Priority != 10 {
		t.Errorf("another tenant's first job = %v, %v; want priority 10", other, err)
	}
	none, err := c.Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k", Priority: 4})
	if err != nil || none.Priority != 4 {
		t.Errorf("job without tenant = %v, %v; want its own priority 4", none, err)
	}
	// Two windows later the load is gone.
	clk.Advance(2 * time.Minute)
	j, err := c.Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k", Tenant: "acme"})
	if err != nil || j.Priority != 10 {
		t.Errorf("after the window = %v, %v; want priority 10", j, err)
	}
}
