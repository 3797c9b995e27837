package redisqueue_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// TestSchedKeys checks that the keys the scripts derive from a job's
// tenant and group are the ones the Go side names through keyspace, for
// names that need escaping, and that a completion job lands in its queue
// (registered, listed, readable by id).
func TestSchedKeys(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		c := s.client(t)
		b := s.backendOn(t, c, withClock(clock.NewFake(epoch)))
		cl := queue.NewClient(b)
		ctx := context.Background()
		const tenant, grp, reports = "a b:c/é{x}", "g:1 2%", "rep orts/{z}"
		if err := cl.SetTenant(ctx, tenant, queue.TenantConfig{Limit: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.CreateGroup(ctx, queue.GroupSpec{ID: grp, CompletionKind: "report", CompletionQueue: reports}); err != nil {
			t.Fatal(err)
		}
		first := mustEnqueue(t, cl, queue.JobSpec{Queue: "q", Kind: "k", Tenant: tenant, Group: grp})
		second := mustEnqueue(t, cl, queue.JobSpec{Queue: "q", Kind: "k", Tenant: tenant, Group: grp})
		if first.State != queue.StatePending || second.State != queue.StateWaiting {
			t.Fatalf("states %s, %s; want pending, waiting", first.State, second.State)
		}
		info, err := cl.Tenant(ctx, tenant)
		if err != nil || info.Pending != 1 || info.Waiting != 1 {
			t.Fatalf("Tenant = %+v, %v; want 1 pending, 1 waiting", info, err)
		}
		// The tenant list derives the same key from the registered name.
		if tp, err := cl.Tenants(ctx, queue.TenantFilter{}); err != nil || len(tp.Tenants) != 1 ||
			tp.Tenants[0].Tenant != tenant || tp.Tenants[0].Waiting != 1 || tp.Tenants[0].Own.Limit != 1 {
			t.Fatalf("Tenants = %+v, %v; want %q with 1 waiting and limit 1", tp, err, tenant)
		}
		for _, k := range []string{"sched:t:" + keyspace.Escape(tenant), "sched:g:" + keyspace.Escape(grp)} {
			if n, _ := c.Exists(ctx, string(s.prefix)+k).Result(); n != 1 {
				t.Errorf("key %s is missing", string(s.prefix)+k)
			}
		}
		for i := 0; i < 2; i++ {
			ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, Max: 10, LeaseFor: time.Minute})
			if err != nil || len(ls) != 1 {
				t.Fatalf("Lease = %d jobs, %v; want 1", len(ls), err)
			}
			if err := b.Complete(ctx, ls[0].Job.ID, ls[0].Token, nil); err != nil {
				t.Fatal(err)
			}
		}
		p, err := cl.Group(ctx, grp)
		if err != nil || !p.Done || p.Completed != 2 || p.CompletionJobID == "" {
			t.Fatalf("Group = %+v, %v; want done with a completion job", p, err)
		}
		j, err := b.Get(ctx, p.CompletionJobID)
		if err != nil || j.Queue != reports || j.Kind != "report" || j.State != queue.StatePending {
			t.Fatalf("completion job = %+v, %v", j, err)
		}
		st, err := b.Stats(ctx)
		if err != nil || !strings.Contains(statsQueues(st), reports) {
			t.Fatalf("Stats = %+v, %v; want the completion queue listed", st, err)
		}
	})
}

func statsQueues(st []queue.QueueStats) string {
	var names []string
	for _, s := range st {
		names = append(names, s.Queue)
	}
	return strings.Join(names, ",")
}

// TestSchedFastPath checks that jobs without tenant or group touch no
// scheduler key outside their queue's slot.
func TestSchedFastPath(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		c := s.client(t)
		b := s.backendOn(t, c, withClock(clock.NewFake(epoch)))
		cl := queue.NewClient(b)
		ctx := context.Background()
		for i := 0; i < 3; i++ {
			mustEnqueue(t, cl, queue.JobSpec{Queue: "q", Kind: "k"})
		}
		ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, Max: 3, LeaseFor: time.Minute})
		if err != nil || len(ls) != 3 {
			t.Fatalf("Lease = %d, %v", len(ls), err)
		}
		for _, l := range ls {
			if err := b.Complete(ctx, l.Job.ID, l.Token, nil); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range keysUnder(t, s, c) {
			if strings.HasPrefix(k, string(s.prefix)+"sched:") {
				t.Errorf("a job without tenant or group wrote %s", k)
			}
		}
	})
}

// TestSchedCluster checks that on a Cluster client the scheduler is off:
// the capabilities say so, its methods answer ErrUnsupported, and jobs
// with a tenant are stored and leased as plain jobs.
func TestSchedCluster(t *testing.T) {
	s := miniServer(t)
	b := s.backendOn(t, s.clusterClient(t), redisqueue.Options{Clock: clock.NewFake(epoch)})
	caps := backend.CapabilitiesOf(b)
	if caps.Has(queue.CapTenants) || caps.Has(queue.CapGroups) || caps.Has(queue.CapAtomicBatch) || caps.Has(queue.CapTenantList) {
		t.Fatalf("Cluster capabilities %s: want no tenants, groups, atomic batches or tenant list", caps)
	}
	ctx := context.Background()
	if err := b.SetTenant(ctx, "a", queue.TenantConfig{Limit: 1}); !errors.Is(err, queue.ErrUnsupported) {
		t.Errorf("SetTenant = %v, want ErrUnsupported", err)
	}
	if _, err := b.CreateGroup(ctx, queue.GroupSpec{ID: "g"}); !errors.Is(err, queue.ErrUnsupported) {
		t.Errorf("CreateGroup = %v, want ErrUnsupported", err)
	}
	if _, err := b.Tenants(ctx, queue.TenantFilter{}); !errors.Is(err, queue.ErrUnsupported) {
		t.Errorf("Tenants = %v, want ErrUnsupported", err)
	}
	cl := queue.NewClient(b)
	for i := 0; i < 2; i++ {
		if j := mustEnqueue(t, cl, queue.JobSpec{Queue: "q", Kind: "k", Tenant: "a"}); j.State != queue.StatePending {
			t.Fatalf("job %d is %s, want pending", i, j.State)
		}
	}
	if _, err := cl.Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k", Group: "g"}); !errors.Is(err, queue.ErrUnsupported) {
		t.Errorf("Enqueue with a group = %v, want ErrUnsupported", err)
	}
}
