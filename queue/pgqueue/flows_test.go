package pgqueue_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/pgqueue"
	"github.com/sluicehq/sluice/queue/queuetest"
)

// The flow tests of this file cover what the conformance suite cannot
// see: the caller's transaction, transitions made by an operator's own
// SQL, chains deeper than any nesting of triggers would allow, cascades
// into other groups, the wake-up of other processes, and parents ending
// while their children are enqueued.

func leaseN(t *testing.T, s *pgqueue.Store, q string, n int) []queue.Lease {
	t.Helper()
	ls, err := s.Lease(context.Background(), backend.LeaseRequest{Queues: []string{q}, WorkerID: "w", Max: n, LeaseFor: time.Minute})
	if err != nil {
		t.Fatalf("Lease(%s): %v", q, err)
	}
	return ls
}

func enqueueOne(t *testing.T, s *pgqueue.Store, spec queue.JobSpec) *queue.Job {
	t.Helper()
	out, err := s.Enqueue(context.Background(), []queue.JobSpec{spec})
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	return out[0].Job
}

func stateOf(t *testing.T, s *pgqueue.Store, id string) queue.State {
	t.Helper()
	j, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return j.State
}

// TestFlowTx: a child enqueued with its parent in the caller's
// transaction, by pgx or database/sql, exists (blocked) only once the
// transaction commits; a rolled-back one leaves no edge behind.
func TestFlowTx(t *testing.T) {
	for _, k := range txKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			s := open(t, nil)
			ctx := context.Background()
			parent := enqueueOne(t, s, queue.JobSpec{Queue: "p", Kind: "k"})
			spec := queue.JobSpec{Queue: "c", Kind: "k", DependsOn: []string{parent.ID}, OnParentFailure: queue.ParentFailureRun}
			gone := k.run(t, s, spec, false)
			child := k.run(t, s, spec, true)
			if child.State != queue.StateBlocked {
				t.Fatalf("child = %s, want blocked", child.State)
			}
			rel, err := s.Relatives(ctx, parent.ID, queue.MaxParentResults)
			if err != nil || len(rel.Children) != 1 || rel.Children[0].ID != child.ID {
				t.Fatalf("Relatives(parent) = %+v, %v; want only child %s (not rolled-back %s)", rel, err, child.ID, gone.ID)
			}
			j, err := s.Get(ctx, child.ID)
			if err != nil || j.OnParentFailure != queue.ParentFailureRun || len(j.DependsOn) != 1 || j.DependsOn[0] != parent.ID {
				t.Fatalf("Get(child) = %+v, %v; want its parent and OnParentFailure run", j, err)
			}
			l := leaseN(t, s, "p", 1)[0]
			if err := s.Complete(ctx, l.Job.ID, l.Token, []byte("out")); err != nil {
				t.Fatal(err)
			}
			if ls := leaseN(t, s, "c", 10); len(ls) != 1 || ls[0].Job.ID != child.ID {
				t.Fatalf("after the parent completed, leased %d jobs of c; want the child", len(ls))
			}
		})
	}
}

// TestFlowOperatorSQL: a parent ended by an operator's own SQL releases
// its child as one ended by the store does.
func TestFlowOperatorSQL(t *testing.T) {
	t.Parallel()
	s := open(t, nil)
	ctx := context.Background()
	parent := enqueueOne(t, s, queue.JobSpec{Queue: "p", Kind: "k"})
	child := enqueueOne(t, s, queue.JobSpec{Queue: "c", Kind: "k", DependsOn: []string{parent.ID}})
	other := enqueueOne(t, s, queue.JobSpec{Queue: "c", Kind: "k", DependsOn: []string{parent.ID}, OnParentFailure: queue.ParentFailureRun})
	_, err := s.Pool().Exec(ctx, qualifyTest(`UPDATE __schema__.jobs SET state = 'failed', last_error = 'by hand',
		finished_at = $1, updated_at = $1 WHERE id = $2`, s.Schema()), time.Now().UnixNano(), parent.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st := stateOf(t, s, child.ID); st != queue.StateCancelled {
		t.Errorf("child of a parent failed by hand = %s, want cancelled", st)
	}
	if ls := leaseN(t, s, "c", 10); len(ls) != 1 || ls[0].Job.ID != other.ID {
		t.Errorf("leased %d jobs; want the child that runs anyway", len(ls))
	}
}

// TestFlowDeepChain: a chain far deeper than nested triggers could go is
// cancelled in the one step that cancels its root, and put back by the
// one retry of that root.
func TestFlowDeepChain(t *testing.T) {
	t.Parallel()
	queuetest.DeepChain(t, open(t, nil), 1500)
}

// TestFlowCascadeOtherGroup: a parent of no group that fails or is
// cancelled cancels its child's group's last job, and that group completes
// in the same step.
func TestFlowCascadeOtherGroup(t *testing.T) {
	for _, how := range []string{"fail", "cancel"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			s := open(t, nil)
			ctx := context.Background()
			c := queue.NewClient(s)
			if _, err := c.CreateGroup(ctx, queue.GroupSpec{ID: "g", CompletionKind: "report", CompletionQueue: "reports"}); err != nil {
				t.Fatal(err)
			}
			parent := enqueueOne(t, s, queue.JobSpec{Queue: "p", Kind: "k"})
			enqueueOne(t, s, queue.JobSpec{Queue: "c", Kind: "k", Group: "g", DependsOn: []string{parent.ID}})
			if how == "fail" {
				l := leaseN(t, s, "p", 1)[0]
				if _, err := s.Fail(ctx, l.Job.ID, l.Token, backend.Failure{Error: "boom", Permanent: true}); err != nil {
					t.Fatal(err)
				}
			} else if _, err := s.Cancel(ctx, parent.ID); err != nil {
				t.Fatal(err)
			}
			p, err := c.Group(ctx, "g")
			if err != nil || !p.Done || p.Cancelled != 1 || p.CompletionJobID == "" {
				t.Fatalf("Group = %+v, %v; want done with its one job cancelled and a completion job", p, err)
			}
		})
	}
}

// TestFlowWakesOtherProcess: a child released by its parent's completion
// wakes the workers of another store on its queue (the trigger notifies
// the store's channel).
func TestFlowWakesOtherProcess(t *testing.T) {
	t.Parallel()
	s := open(t, nil)
	other := reopen(t, s)
	ctx := context.Background()
	parent := enqueueOne(t, s, queue.JobSpec{Queue: "p", Kind: "k"})
	enqueueOne(t, s, queue.JobSpec{Queue: "released", Kind: "k", DependsOn: []string{parent.ID}})
	wake, stop := other.Subscribe([]string{"released"})
	defer stop()
	syncNotify(t, s, other, "mark-1")
	syncNotify(t, s, other, "mark-2")
	drainNow(wake)
	l := leaseN(t, s, "p", 1)[0]
	if err := s.Complete(ctx, l.Job.ID, l.Token, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(30 * time.Second):
		t.Fatal("the released child's queue was not notified")
	}
}

// TestNotifyChannel: the SQL function the trigger names the channel with
// agrees with the store, for a short schema and one whose channel would
// be too long.
func TestNotifyChannel(t *testing.T) {
	t.Parallel()
	s := open(t, nil)
	for _, schema := range []string{"sluice", strings.Repeat("é", 40)} {
		var got string
		err := s.Pool().QueryRow(context.Background(), qualifyTest(`SELECT __schema__.notify_channel($1)`, s.Schema()), schema).Scan(&got)
		if err != nil {
			t.Fatal(err)
		}
		if want := pgqueue.ChannelName(schema); got != want {
			t.Errorf("notify_channel(%q) = %q, want %q", schema, got, want)
		}
	}
}

// TestFlowParentsEndWhileChildrenEnqueue: children enqueued while their
// parents complete or fail, from many goroutines, each see their parents
// either before or after their end, never in between: once every parent
// has ended, no child is left blocked.
func TestFlowParentsEndWhileChildrenEnqueue(t *testing.T) {
	t.Parallel()
	s := open(t, nil)
	ctx := context.Background()
	const parents, children = 40, 120
	specs := make([]queue.JobSpec, parents)
	for i := range specs {
		specs[i] = queue.JobSpec{Queue: "p", Kind: "k"}
	}
	if _, err := s.Enqueue(ctx, specs); err != nil {
		t.Fatal(err)
	}
	leases := leaseN(t, s, "p", parents)
	if len(leases) != parents {
		t.Fatalf("leased %d parents, want %d", len(leases), parents)
	}
	var wg sync.WaitGroup
	errs := make(chan error, parents+children)
	for i, l := range leases {
		wg.Go(func() {
			if i%5 == 0 {
				_, err := s.Fail(ctx, l.Job.ID, l.Token, backend.Failure{Error: "boom", Permanent: true})
				errs <- err
				return
			}
			errs <- s.Complete(ctx, l.Job.ID, l.Token, nil)
		})
	}
	for i := range children {
		wg.Go(func() {
			deps := []string{leases[i%parents].Job.ID, leases[(i*7+3)%parents].Job.ID}
			if deps[0] == deps[1] {
				deps = deps[:1]
			}
			_, err := s.Enqueue(ctx, []queue.JobSpec{{Queue: "c", Kind: "k", DependsOn: deps, OnParentFailure: queue.ParentFailureRun}})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Every step has returned, so every commit is visible: a child left
	// blocked now missed its parent's end.
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range st {
		if q.Queue == "c" && (q.Counts[queue.StateBlocked] != 0 || q.Counts[queue.StateScheduled]+q.Counts[queue.StatePending] != children) {
			t.Fatalf("children = %v; want all %d released, none blocked", q.Counts, children)
		}
	}
}
