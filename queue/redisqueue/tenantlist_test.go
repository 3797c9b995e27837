package redisqueue_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// TestTenantRegistry checks that the registry behind Tenants holds exactly
// the tenants with unfinished jobs or settings of their own, after each
// kind of step that adds or removes one.
func TestTenantRegistry(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		c := s.client(t)
		clk := clock.NewFake(epoch)
		b := s.backendOn(t, c, withClock(clk))
		cl := queue.NewClient(b)
		ctx := context.Background()
		reg := string(s.prefix) + "sched:tenants"
		want := func(step string, names ...string) {
			t.Helper()
			got, err := c.ZRange(ctx, reg, 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, names) && !(len(got) == 0 && len(names) == 0) {
				t.Errorf("after %s: registry = %v, want %v", step, got, names)
			}
		}
		lease := func() queue.Lease {
			t.Helper()
			ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, Max: 1, LeaseFor: time.Minute})
			if err != nil || len(ls) != 1 {
				t.Fatalf("Lease = %d jobs, %v; want 1", len(ls), err)
			}
			return ls[0]
		}
		mustEnqueue(t, cl, queue.JobSpec{Queue: "q", Kind: "k"})
		want("a job without tenant")
		mustEnqueue(t, cl, queue.JobSpec{Queue: "q", Kind: "k", Tenant: "a"})
		want("an enqueue", "a")
		l := lease() // the job without tenant
		if err := b.Complete(ctx, l.Job.ID, l.Token, nil); err != nil {
			t.Fatal(err)
		}
		l = lease()
		want("a lease", "a")
		if _, err := b.Fail(ctx, l.Job.ID, l.Token, backend.Failure{Error: "x", RetryIn: time.Second}); err != nil {
			t.Fatal(err)
		}
		want("a failure to retry", "a")
		clk.Advance(time.Second)
		l = lease()
		if err := b.Complete(ctx, l.Job.ID, l.Token, nil); err != nil {
			t.Fatal(err)
		}
		want("the last job's completion")
		j := mustEnqueue(t, cl, queue.JobSpec{Queue: "q", Kind: "k", Tenant: "b", RunAt: clk.Now().Add(time.Hour)})
		want("a scheduled job", "b")
		if _, err := b.Cancel(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
		want("a cancel")
		if _, err := cl.BackOff(ctx, queue.TenantScope("c"), time.Second); err != nil {
			t.Fatal(err)
		}
		if err := cl.SetTenant(ctx, "d", queue.TenantConfig{}); err != nil {
			t.Fatal(err)
		}
		want("a pause and settings", "c", "d")
		mustEnqueue(t, cl, queue.JobSpec{Queue: "q", Kind: "k", Tenant: "d"})
		l = lease()
		if err := b.Complete(ctx, l.Job.ID, l.Token, nil); err != nil {
			t.Fatal(err)
		}
		want("a tenant with settings finishing its jobs", "c", "d")
	})
}

// TestTenantsBusiestSteps checks the busiest order when the registry is
// read in several steps: every page size gives the full order, the same
// as sorting every tenant at once.
func TestTenantsBusiestSteps(t *testing.T) {
	defer redisqueue.SetTenantStep(3)()
	forEachServer(t, func(t *testing.T, s server) {
		b := s.backendOn(t, s.client(t), withClock(clock.NewFake(epoch)))
		cl := queue.NewClient(b)
		ctx := context.Background()
		// Tenant n has n%4 jobs behind a limit of 1, one of them active
		// when n%3 == 0; names go against the busiest order.
		var want []string
		for _, n := range []int{10, 9, 8, 7, 6, 5, 4, 3, 2, 1} {
			name := fmt.Sprintf("t%02d", n)
			if err := cl.SetTenant(ctx, name, queue.TenantConfig{Limit: 1}); err != nil {
				t.Fatal(err)
			}
			for range n % 4 {
				mustEnqueue(t, cl, queue.JobSpec{Queue: "q" + name, Kind: "k", Tenant: name})
			}
			if n%3 == 0 && n%4 > 0 {
				if ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"q" + name}, Max: 1, LeaseFor: time.Minute}); err != nil || len(ls) != 1 {
					t.Fatalf("Lease = %d jobs, %v; want 1", len(ls), err)
				}
			}
		}
		// One active: t03 (2 waiting), t06 (1), t09 (none); then by
		// backlog: t07 (3), t02 and t10 (2), t01 and t05 (1); then t04, t08.
		want = []string{"t03", "t06", "t09", "t07", "t02", "t10", "t01", "t05", "t04", "t08"}
		for _, limit := range []int{1, 2, 3, 4, 100} {
			var got []string
			f := queue.TenantFilter{Order: queue.TenantsBusiest, Limit: limit}
			for range 20 {
				p, err := cl.Tenants(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				for _, info := range p.Tenants {
					got = append(got, info.Tenant)
				}
				if f.Cursor = p.Next; f.Cursor == "" {
					break
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("busiest, limit %d = %v, want %v", limit, got, want)
			}
		}
	})
}
