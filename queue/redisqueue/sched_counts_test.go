package redisqueue_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// TestCountsMatchJobs drives a random mix of every transition over
// tenants and groups, then checks the counts and sets the scripts keep
// against a fresh count of the jobs: they must agree for every tenant,
// group and state. Then it drains the queue: no job may stay waiting with
// nothing to wait for.
func TestCountsMatchJobs(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		clk := clock.NewFake(epoch)
		c := s.client(t)
		b := s.backendOn(t, c, redisqueue.Options{Clock: clk})
		cl := queue.NewClient(b)
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(1, 2))
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(cl.SetTenantDefaults(ctx, queue.TenantConfig{Limit: 3}))
		for g := 0; g < 3; g++ {
			_, err := cl.CreateGroup(ctx, queue.GroupSpec{ID: fmt.Sprint("g", g), MaxConcurrency: 2, CompletionKind: "done"})
			must(err)
		}
		var held []queue.Lease
		for step := 0; step < 2000; step++ {
			switch r := rng.IntN(100); {
			case r < 35:
				sp := queue.JobSpec{Queue: "q", Kind: "k", Tenant: fmt.Sprint("t", rng.IntN(4)), Priority: rng.IntN(3)}
				if rng.IntN(2) == 0 {
					sp.Group = fmt.Sprint("g", rng.IntN(3))
				}
				if rng.IntN(5) == 0 {
					sp.RunAt = clk.Now().Add(time.Duration(rng.IntN(3)) * time.Second)
				}
				if _, err := cl.Enqueue(ctx, sp); err != nil && !errors.Is(err, queue.ErrGroupClosed) {
					t.Fatal(err)
				}
			case r < 60:
				ls, err := b.Lease(ctx, queue.LeaseRequest{Queues: []string{"q"}, WorkerID: "w", Max: 3, LeaseFor: time.Minute})
				must(err)
				held = append(held, ls...)
			case r < 85 && len(held) > 0:
				i := rng.IntN(len(held))
				l := held[i]
				held = append(held[:i], held[i+1:]...)
				endAttempt(t, b, l, rng.IntN(5))
			case r < 88 && len(held) > 0:
				_, err := b.Cancel(ctx, held[rng.IntN(len(held))].Job.ID)
				must(err)
			case r < 92:
				clk.Advance(time.Second)
			case r < 94:
				// t3 is never paused: with no settings, it leaves the
				// tenant list's registry when its last job finishes.
				_, err := cl.BackOff(ctx, queue.TenantScope(fmt.Sprint("t", rng.IntN(3))), time.Duration(rng.IntN(3))*time.Second)
				must(err)
			case r < 95:
				_, err := cl.CancelGroup(ctx, fmt.Sprint("g", rng.IntN(3)))
				if !errors.Is(err, queue.ErrGroupNotFound) { // the cleaner deletes done groups
					must(err)
				}
			case r < 97:
				clk.Advance(2 * time.Minute) // every held lease expires
				_, err := b.RescueExpired(ctx, queue.RescueRequest{MaxStalls: 3})
				must(err)
				held = nil
			default:
				_, err := b.Cleanup(ctx, queue.CleanupRequest{Retention: queue.Retention{Completed: time.Second, Failed: time.Second, Cancelled: time.Second}})
				must(err)
			}
		}
		compareCounts(t, s, c, cl)
		drainAll(t, b, clk, held)
		compareCounts(t, s, c, cl)
	})
}

// drainAll finishes the held leases, then leases and completes until
// nothing is left.
func drainAll(t *testing.T, b *redisqueue.Backend, clk *clock.Fake, held []queue.Lease) {
	t.Helper()
	ctx := context.Background()
	clk.Advance(time.Hour) // past every pause and delay
	for _, l := range held {
		endAttempt(t, b, l, 0)
	}
	for round := 0; round < 200; round++ {
		ls, err := b.Lease(ctx, queue.LeaseRequest{Queues: []string{"q", "default"}, WorkerID: "w", Max: 50, LeaseFor: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			endAttempt(t, b, l, 0)
		}
		if len(ls) > 0 {
			continue
		}
		st, err := b.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		left := int64(0)
		for _, q := range st {
			for _, s := range []queue.State{queue.StateScheduled, queue.StatePending, queue.StateWaiting, queue.StateRetrying, queue.StateActive} {
				left += q.Counts[s]
			}
		}
		if left == 0 {
			return
		}
		clk.Advance(time.Minute) // retries and snoozes come due
	}
	st, _ := b.Stats(context.Background())
	t.Fatalf("jobs left that never ran: %+v", st)
}

// endAttempt ends a held lease one of five ways.
func endAttempt(t *testing.T, b *redisqueue.Backend, l queue.Lease, how int) {
	t.Helper()
	ctx := context.Background()
	var err error
	switch how {
	case 0:
		err = b.Complete(ctx, l.Job.ID, l.Token, nil)
	case 1:
		_, err = b.Fail(ctx, l.Job.ID, l.Token, queue.Failure{Error: "x", RetryIn: time.Second})
	case 2:
		_, err = b.Fail(ctx, l.Job.ID, l.Token, queue.Failure{Error: "x", Permanent: true})
	case 3:
		_, err = b.Snooze(ctx, l.Job.ID, l.Token, time.Second)
	default:
		_, err = b.Requeue(ctx, l.Job.ID, l.Token)
	}
	if err != nil && !errors.Is(err, queue.ErrLeaseLost) {
		t.Fatal(err)
	}
}

// compareCounts counts every job by tenant, group and state (List) and
// checks them against Tenant and Group (unfinished states exactly; for
// groups, finished states at least, since the cleaner deletes finished
// jobs and their counts stay), and the scopes' pending and waiting sets.
func compareCounts(t *testing.T, s server, c redis.UniversalClient, cl *queue.Client) {
	t.Helper()
	ctx := context.Background()
	type key struct{ scope, name string }
	got := map[key]map[queue.State]int64{}
	add := func(k key, st queue.State) {
		if got[k] == nil {
			got[k] = map[queue.State]int64{}
		}
		got[k][st]++
	}
	f := queue.ListFilter{Limit: queue.MaxListLimit}
	for {
		p, err := cl.List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range p.Jobs {
			if j.Tenant != "" {
				add(key{"t", j.Tenant}, j.State)
			}
			if j.Group != "" {
				add(key{"g", j.Group}, j.State)
			}
		}
		if p.Next == "" {
			break
		}
		f.Cursor = p.Next
	}
	unfinished := []queue.State{queue.StateScheduled, queue.StatePending, queue.StateWaiting, queue.StateActive, queue.StateRetrying}
	byState := map[queue.State]int64{}
	for k, m := range got {
		if k.scope == "t" {
			for st, n := range m {
				byState[st] += n
			}
		}
	}
	t.Logf("jobs of tenants by state: %v", byState)
	for i := 0; i < 4; i++ {
		name := fmt.Sprint("t", i)
		info, err := cl.Tenant(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		have := map[queue.State]int64{queue.StateScheduled: info.Scheduled, queue.StatePending: info.Pending,
			queue.StateWaiting: info.Waiting, queue.StateActive: info.Active, queue.StateRetrying: info.Retrying}
		for _, st := range unfinished {
			if want := got[key{"t", name}][st]; have[st] != want {
				t.Errorf("tenant %s %s: counted %d, jobs %d", name, st, have[st], want)
			}
		}
		wantSets(t, c, string(s.prefix)+"sched:t:"+keyspace.Escape(name), have)
		wantListed(t, c, string(s.prefix), name, have)
	}
	for i := 0; i < 3; i++ {
		name := fmt.Sprint("g", i)
		p, err := cl.Group(ctx, name)
		if errors.Is(err, queue.ErrGroupNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		have := map[queue.State]int64{queue.StateScheduled: p.Scheduled, queue.StatePending: p.Pending,
			queue.StateWaiting: p.Waiting, queue.StateActive: p.Active, queue.StateRetrying: p.Retrying,
			queue.StateCompleted: p.Completed, queue.StateFailed: p.Failed, queue.StateCancelled: p.Cancelled}
		for st, n := range have {
			want := got[key{"g", name}][st]
			if st.Final() && n < want || !st.Final() && n != want {
				t.Errorf("group %s %s: counted %d, jobs %d", name, st, n, want)
			}
		}
		wantSets(t, c, string(s.prefix)+"sched:g:"+keyspace.Escape(name), have)
		if open, _ := c.SCard(ctx, string(s.prefix)+"sched:g:"+keyspace.Escape(name)+":open").Result(); open != p.Unfinished() {
			t.Errorf("group %s: %d jobs in its open set, %d unfinished", name, open, p.Unfinished())
		}
	}
}

// wantSets checks that a scope's pending and waiting sets hold as many
// jobs as its counts say.
func wantSets(t *testing.T, c redis.UniversalClient, k string, have map[queue.State]int64) {
	t.Helper()
	for _, st := range []queue.State{queue.StatePending, queue.StateWaiting} {
		if n, _ := c.ZCard(context.Background(), k+":"+string(st)).Result(); n != have[st] {
			t.Errorf("%s:%s holds %d jobs, counts say %d", k, st, n, have[st])
		}
	}
}

// wantListed checks that a tenant is in the tenant list's registry
// exactly when it has unfinished jobs or settings of its own (l, or a
// pause's pu).
func wantListed(t *testing.T, c redis.UniversalClient, prefix, name string, have map[queue.State]int64) {
	t.Helper()
	ctx := context.Background()
	k := prefix + "sched:t:" + keyspace.Escape(name)
	var jobs int64
	for _, n := range have {
		jobs += n
	}
	l, _ := c.HExists(ctx, k, "l").Result()
	pu, _ := c.HExists(ctx, k, "pu").Result()
	_, err := c.ZScore(ctx, prefix+"sched:tenants", name).Result()
	if listed, want := err == nil, jobs > 0 || l || pu; listed != want {
		t.Errorf("tenant %s: registered %v, want %v (%d unfinished jobs, settings %v, pause %v)", name, listed, want, jobs, l, pu)
	}
}
