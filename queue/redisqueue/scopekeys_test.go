package redisqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// TestOddNamesShareKeys follows a tenant and a group whose names need
// escaping through every way their keys are named: by Go for the names a
// call gives (SetTenant, Enqueue, Tenant, Group, CancelGroup), and by the
// scripts for the names they find in jobs and sets (a completion that
// releases the tenant's waiting job, the tenant list). Every count read
// back through a Go-named key was written under a script-named one, so a
// difference between the two escapes shows as a wrong count.
func TestOddNamesShareKeys(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		ctx := context.Background()
		b := s.backend(t, redisqueue.Options{})
		c := queue.NewClient(b)
		const tenant, group, q = "a b:{x} 50%~7E é", "g:{y}%~ 队", "odd names"
		if err := c.SetTenant(ctx, tenant, queue.TenantConfig{Limit: 1}); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			mustEnqueue(t, c, queue.JobSpec{Queue: q, Kind: "k", Tenant: tenant, Group: group})
		}
		counts := func(want [3]int64) {
			t.Helper()
			ti, err := c.Tenant(ctx, tenant)
			if err != nil {
				t.Fatal(err)
			}
			if got := [3]int64{ti.Pending, ti.Waiting, ti.Active}; got != want || ti.Effective.Limit != 1 {
				t.Fatalf("tenant: pending, waiting, active %v, limit %d; want %v, limit 1", got, ti.Effective.Limit, want)
			}
		}
		counts([3]int64{1, 1, 0})
		ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{q}, Max: 2, LeaseFor: time.Minute})
		if err != nil || len(ls) != 1 {
			t.Fatalf("Lease = %d jobs, %v; want 1", len(ls), err)
		}
		counts([3]int64{0, 1, 1})
		if err := b.Complete(ctx, ls[0].Job.ID, ls[0].Token, nil); err != nil {
			t.Fatal(err)
		}
		counts([3]int64{1, 0, 0}) // the completion released the waiting job
		page, err := c.Tenants(ctx, queue.TenantFilter{})
		if err != nil || len(page.Tenants) != 1 || page.Tenants[0].Tenant != tenant ||
			page.Tenants[0].Own.Limit != 1 || page.Tenants[0].Pending != 1 {
			t.Fatalf("Tenants = %+v, %v; want %q alone, limit 1, one pending", page, err, tenant)
		}
		g, err := c.Group(ctx, group)
		if err != nil || g.Completed != 1 || g.Pending != 1 {
			t.Fatalf("Group = %+v, %v; want one completed, one pending", g, err)
		}
		g, err = c.CancelGroup(ctx, group)
		if err != nil || g.Cancelled != 1 || g.Pending != 0 {
			t.Fatalf("CancelGroup = %+v, %v; want one cancelled, none pending", g, err)
		}
		counts([3]int64{0, 0, 0})
	})
}
