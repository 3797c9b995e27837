package queuetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// RunFlows runs the flow tests: dependencies between jobs (chains, fan-out,
// fan-in of 1,000 parents), a parent's failure and its retry by hand, a
// child's retry refused while a parent holds it back,
// cancelling a flow, bad graphs, groups holding flows. Run calls it; each
// test needs queue.CapFlows.
func RunFlows(t *testing.T, f Factory) {
	runTests(t, f, []test{
		{"Chain", needs(queue.CapFlows), testFlowChain},
		{"FanOut", needs(queue.CapFlows), testFlowFanOut},
		{"FanIn", needs(queue.CapFlows), testFlowFanIn},
		{"DependsOn", needs(queue.CapFlows), testFlowDependsOn},
		{"BadGraph", needs(queue.CapFlows, queue.CapList), testFlowBadGraph},
		{"ParentFails", needs(queue.CapFlows), testFlowParentFails},
		{"RetryParent", needs(queue.CapFlows, queue.CapRetry), testFlowRetryParent},
		{"RetryChild", needs(queue.CapFlows, queue.CapRetry, queue.CapCancelPending), testFlowRetryChild},
		{"Cancel", needs(queue.CapFlows, queue.CapCancelPending), testFlowCancel},
		{"Stall", needs(queue.CapFlows), testFlowStall},
		{"TenantLimit", needs(queue.CapFlows, queue.CapTenants), testFlowTenantLimit},
		{"TenantBacklog", needs(queue.CapFlows, queue.CapTenants), testFlowTenantBacklog},
		{"Cleanup", needs(queue.CapFlows), testFlowCleanup},
		{"Group", needs(queue.CapFlows, queue.CapGroups), testFlowGroup},
		{"RetryParentGroup", needs(queue.CapFlows, queue.CapGroups, queue.CapRetry), testFlowRetryParentGroup},
		{"RetryDiamond", needs(queue.CapFlows, queue.CapRetry), testFlowRetryDiamond},
	})
}

// chain returns a flow of nodes named names, each after the one before.
func chain(q string, names ...string) queue.FlowSpec {
	var f queue.FlowSpec
	for i, n := range names {
		f.Nodes = append(f.Nodes, queue.FlowNode{Name: n, Job: queue.JobSpec{Queue: q, Kind: n}})
		if i > 0 {
			f.Edges = append(f.Edges, queue.FlowEdge{Parent: names[i-1], Child: n})
		}
	}
	return f
}

func (h *Harness) enqueueFlow(t *testing.T, f queue.FlowSpec) *queue.Flow {
	t.Helper()
	fl, err := h.Client.EnqueueFlow(context.Background(), f)
	if err != nil {
		t.Fatalf("EnqueueFlow: %v", err)
	}
	if len(fl.Jobs) != len(f.Nodes) || fl.ID == "" {
		t.Fatalf("EnqueueFlow = %d jobs, id %q; want %d jobs and an id", len(fl.Jobs), fl.ID, len(f.Nodes))
	}
	return fl
}

// completeWith completes a lease with result.
func (h *Harness) completeWith(t *testing.T, l queue.Lease, result string) {
	t.Helper()
	if err := h.Backend.Complete(context.Background(), l.Job.ID, l.Token, []byte(result)); err != nil {
		t.Fatalf("Complete(%s): %v", l.Job.ID, err)
	}
}

// wantNoLease checks that queue q has nothing ready.
func (h *Harness) wantNoLease(t *testing.T, q, why string) {
	t.Helper()
	if ls := h.lease(t, 10, q); len(ls) != 0 {
		t.Fatalf("%s: leased %v, want nothing", why, ids(ls))
	}
}

func testFlowChain(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	fl := h.enqueueFlow(t, chain(QueueQ, "crawl", "extract", "summarise"))
	for i, want := range []queue.State{queue.StatePending, queue.StateBlocked, queue.StateBlocked} {
		j := h.get(t, fl.Jobs[i].ID)
		if j.State != want || j.Flow != fl.ID || j.FlowNode != fl.Jobs[i].FlowNode {
			t.Fatalf("job %d = %s in flow %q node %q; want %s in %q", i, j.State, j.Flow, j.FlowNode, want, fl.ID)
		}
	}
	st, err := h.Backend.Stats(ctx)
	if err != nil || count(st, QueueQ, queue.StateBlocked) != 2 {
		t.Fatalf("Stats = %+v, %v; want 2 blocked", st, err)
	}
	prev := ""
	for i, name := range []string{"crawl", "extract", "summarise"} {
		l := h.leaseOne(t, QueueQ)
		if l.Job.Kind != name {
			t.Fatalf("leased %s, want %s", l.Job.Kind, name)
		}
		if i > 0 {
			j, err := h.Client.Get(ctx, l.Job.ID)
			if err != nil || len(j.Parents) != 1 || string(j.Parents[0].Result) != prev || j.Parents[0].FlowNode == "" {
				t.Fatalf("Get(%s).Parents = %+v, %v; want one parent with result %q", l.Job.ID, j.Parents, err, prev)
			}
		}
		h.wantNoLease(t, QueueQ, "while "+name+" runs")
		prev = "out of " + name
		h.completeWith(t, l, prev)
	}
	got, err := h.Client.Flow(ctx, fl.ID)
	if err != nil || len(got.Jobs) != 3 {
		t.Fatalf("Flow = %+v, %v", got, err)
	}
	for _, j := range got.Jobs {
		if j.State != queue.StateCompleted {
			t.Fatalf("flow job %s (%s) = %s, want completed", j.ID, j.FlowNode, j.State)
		}
	}
	if _, err := h.Client.Flow(ctx, "flow_nope"); !errors.Is(err, queue.ErrFlowNotFound) {
		t.Fatalf("Flow(unknown) = %v, want ErrFlowNotFound", err)
	}
}

func testFlowFanOut(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	fs := queue.FlowSpec{Nodes: []queue.FlowNode{{Name: "root", Job: spec(QueueQ, "root")}}}
	for i := range 50 {
		n := fmt.Sprintf("leaf%d", i)
		fs.Nodes = append(fs.Nodes, queue.FlowNode{Name: n, Job: spec(QueueQ, "leaf")})
		fs.Edges = append(fs.Edges, queue.FlowEdge{Parent: "root", Child: n})
	}
	fl := h.enqueueFlow(t, fs)
	h.completeWith(t, h.leaseOne(t, QueueQ), "r")
	leaves := h.lease(t, 100, QueueQ)
	if len(leaves) != 50 {
		t.Fatalf("after the root completed, leased %d leaves, want 50", len(leaves))
	}
	rel, err := h.Client.Relatives(ctx, fl.Jobs[0].ID)
	if err != nil || len(rel.Children) != 50 || len(rel.Parents) != 0 {
		t.Fatalf("Relatives(root) = %d children, %d parents, %v; want 50, 0", len(rel.Children), len(rel.Parents), err)
	}
}

// testFlowFanIn: one job waits for 1,000 parents and is released exactly
// when the last completes, with every parent's result.
func testFlowFanIn(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	const n = queue.MaxParents
	fs := queue.FlowSpec{Nodes: []queue.FlowNode{{Name: "sink", Job: spec(QueueS, "sink")}}}
	for i := range n {
		name := fmt.Sprintf("p%d", i)
		fs.Nodes = append(fs.Nodes, queue.FlowNode{Name: name, Job: spec(QueueQ, "part")})
		fs.Edges = append(fs.Edges, queue.FlowEdge{Parent: name, Child: "sink"})
	}
	fl := h.enqueueFlow(t, fs)
	sink := fl.Job("sink")
	if sink == nil || sink.State != queue.StateBlocked || len(sink.DependsOn) != n {
		t.Fatalf("sink = %+v, want blocked on %d parents", sink, n)
	}
	var parts []queue.Lease
	for len(parts) < n {
		ls := h.lease(t, 100, QueueQ)
		if len(ls) == 0 {
			t.Fatalf("only %d parts ready, want %d", len(parts), n)
		}
		parts = append(parts, ls...)
	}
	// All but the last complete at once (as many workers would): the
	// sink stays blocked; the last one releases it.
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, l := range parts[:n-1] {
		wg.Go(func() { errs <- h.Backend.Complete(ctx, l.Job.ID, l.Token, []byte("x")) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
	}
	h.wantState(t, sink.ID, queue.StateBlocked)
	h.wantNoLease(t, QueueS, "one parent left")
	h.completeWith(t, parts[n-1], "x")
	l := h.leaseOne(t, QueueS)
	if l.Job.ID != sink.ID {
		t.Fatalf("leased %s, want the sink %s", l.Job.ID, sink.ID)
	}
	j, err := h.Client.Get(ctx, sink.ID)
	if err != nil || len(j.Parents) != n {
		t.Fatalf("sink parents = %d, %v; want %d", len(j.Parents), err, n)
	}
	for _, p := range j.Parents {
		if p.State != queue.StateCompleted || string(p.Result) != "x" {
			t.Fatalf("parent %+v, want completed with result x", p)
		}
	}
}

func testFlowDependsOn(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	parent := h.enqueue(t, spec(QueueQ, "p"))
	child := h.enqueue(t, queue.JobSpec{Queue: QueueS, Kind: "c", DependsOn: []string{parent.ID}})
	if child.State != queue.StateBlocked || !slices.Equal(h.get(t, child.ID).DependsOn, []string{parent.ID}) {
		t.Fatalf("child = %s with parents %v, want blocked on %s", child.State, child.DependsOn, parent.ID)
	}
	if _, err := h.Client.Enqueue(ctx, queue.JobSpec{Queue: QueueS, Kind: "c", DependsOn: []string{"999999999"}}); !errors.Is(err, queue.ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "DependsOn") {
		t.Fatalf("Enqueue(unknown parent) = %v, want an invalid argument naming DependsOn", err)
	}
	h.wantNoLease(t, QueueS, "child of a pending parent")
	h.completeWith(t, h.leaseOne(t, QueueQ), "p")
	if l := h.leaseOne(t, QueueS); l.Job.ID != child.ID {
		t.Fatalf("leased %s, want %s", l.Job.ID, child.ID)
	}
	// A parent already completed: ready at once.
	late := h.enqueue(t, queue.JobSpec{Queue: QueueS, Kind: "c", DependsOn: []string{parent.ID}})
	if late.State != queue.StatePending {
		t.Fatalf("child of a completed parent = %s, want pending", late.State)
	}
	// A parent already failed: cancelled at once, naming it.
	failed := h.enqueue(t, spec(QueueQ, "p"))
	h.failForGood(t, QueueQ, "boom")
	orphan := h.enqueue(t, queue.JobSpec{Queue: QueueS, Kind: "c", DependsOn: []string{failed.ID}})
	if orphan.State != queue.StateCancelled || !strings.Contains(orphan.LastError, failed.ID) {
		t.Fatalf("child of a failed parent = %s (%q), want cancelled naming %s", orphan.State, orphan.LastError, failed.ID)
	}
}

func testFlowBadGraph(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	node := func(n string) queue.FlowNode { return queue.FlowNode{Name: n, Job: spec(QueueQ, "k")} }
	cases := []struct {
		name  string
		flow  queue.FlowSpec
		field string
	}{
		{"cycle", queue.FlowSpec{Nodes: []queue.FlowNode{node("a"), node("b"), node("c")},
			Edges: []queue.FlowEdge{{Parent: "a", Child: "b"}, {Parent: "b", Child: "c"}, {Parent: "c", Child: "a"}}}, "FlowEdge.Child"},
		{"self", queue.FlowSpec{Nodes: []queue.FlowNode{node("a")}, Edges: []queue.FlowEdge{{Parent: "a", Child: "a"}}}, "edges[0].FlowEdge.Child"},
		{"unknown parent", queue.FlowSpec{Nodes: []queue.FlowNode{node("a")}, Edges: []queue.FlowEdge{{Parent: "x", Child: "a"}}}, "edges[0].FlowEdge.Parent"},
		{"unknown child", queue.FlowSpec{Nodes: []queue.FlowNode{node("a")}, Edges: []queue.FlowEdge{{Parent: "a", Child: "y"}}}, "edges[0].FlowEdge.Child"},
		{"duplicate name", queue.FlowSpec{Nodes: []queue.FlowNode{node("a"), node("a")}}, "nodes[1].FlowNode.Name"},
		{"bad spec", queue.FlowSpec{Nodes: []queue.FlowNode{node("a"), {Name: "b", Job: queue.JobSpec{Queue: QueueQ}}}}, "nodes[1].JobSpec.Kind"},
		{"no nodes", queue.FlowSpec{}, "FlowSpec.Nodes"},
		{"unknown external parent", queue.FlowSpec{Nodes: []queue.FlowNode{node("a"),
			{Name: "b", Job: queue.JobSpec{Queue: QueueQ, Kind: "k", DependsOn: []string{"999999999"}}}}}, "DependsOn"},
	}
	for _, c := range cases {
		_, err := h.Client.EnqueueFlow(ctx, c.flow)
		var ia *queue.InvalidArgumentError
		if !errors.As(err, &ia) || !strings.Contains(ia.Field, c.field) {
			t.Errorf("%s: EnqueueFlow = %v, want an invalid argument naming %s", c.name, err, c.field)
		}
	}
	if p, err := h.Backend.List(ctx, queue.ListFilter{}); err != nil || len(p.Jobs) != 0 {
		t.Fatalf("after refused flows List = %d jobs, %v; want nothing stored", len(p.Jobs), err)
	}
}

// parentFailFlow is root → {cancelled, runs}, cancelled → grand.
func parentFailFlow() queue.FlowSpec {
	return queue.FlowSpec{
		Nodes: []queue.FlowNode{
			{Name: "root", Job: spec(QueueQ, "root")},
			{Name: "cancelled", Job: spec(QueueS, "c")},
			{Name: "runs", Job: queue.JobSpec{Queue: QueueS, Kind: "r", OnParentFailure: queue.ParentFailureRun}},
			{Name: "grand", Job: spec(QueueS, "g")},
		},
		Edges: []queue.FlowEdge{{Parent: "root", Child: "cancelled"}, {Parent: "root", Child: "runs"}, {Parent: "cancelled", Child: "grand"}},
	}
}

func testFlowParentFails(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	fl := h.enqueueFlow(t, parentFailFlow())
	root := h.failForGood(t, QueueQ, "boom")
	c := h.wantState(t, fl.Job("cancelled").ID, queue.StateCancelled)
	if !strings.Contains(c.LastError, root.ID) {
		t.Fatalf("cancelled child's LastError = %q, want it to name parent %s", c.LastError, root.ID)
	}
	g := h.wantState(t, fl.Job("grand").ID, queue.StateCancelled)
	if !strings.Contains(g.LastError, c.ID) {
		t.Fatalf("grandchild's LastError = %q, want it to name %s", g.LastError, c.ID)
	}
	l := h.leaseOne(t, QueueS)
	if l.Job.ID != fl.Job("runs").ID {
		t.Fatalf("leased %s, want the run-anyway child", l.Job.ID)
	}
}

func testFlowRetryParent(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	fl := h.enqueueFlow(t, parentFailFlow())
	root := h.failForGood(t, QueueQ, "boom")
	h.completeWith(t, h.leaseOne(t, QueueS), "ran anyway")
	if _, err := h.Client.Retry(ctx, root.ID); err != nil {
		t.Fatalf("Retry(root): %v", err)
	}
	h.wantState(t, fl.Job("cancelled").ID, queue.StateBlocked)
	h.wantState(t, fl.Job("grand").ID, queue.StateBlocked)
	h.wantState(t, fl.Job("runs").ID, queue.StateCompleted)
	h.completeWith(t, h.leaseOne(t, QueueQ), "ok")
	l := h.leaseOne(t, QueueS)
	if l.Job.ID != fl.Job("cancelled").ID {
		t.Fatalf("leased %s, want the child put back", l.Job.ID)
	}
	h.completeWith(t, l, "ok")
	if l := h.leaseOne(t, QueueS); l.Job.ID != fl.Job("grand").ID {
		t.Fatalf("leased %s, want the grandchild", l.Job.ID)
	}
}

func testFlowCancel(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	fs := chain(QueueQ, "a", "b", "c")
	fs.Nodes = append(fs.Nodes, queue.FlowNode{Name: "solo", Job: spec(QueueS, "solo")})
	fl := h.enqueueFlow(t, fs)
	running := h.leaseOne(t, QueueQ)
	got, err := h.Client.CancelFlow(ctx, fl.ID)
	if err != nil {
		t.Fatalf("CancelFlow: %v", err)
	}
	for _, j := range got.Jobs {
		switch {
		case j.ID == running.Job.ID:
			if !j.CancelRequested {
				t.Errorf("running job %s not asked to stop", j.ID)
			}
		case j.State != queue.StateCancelled:
			t.Errorf("job %s (%s) = %s, want cancelled", j.ID, j.FlowNode, j.State)
		}
	}
	if _, err := h.Backend.Fail(ctx, running.Job.ID, running.Token, backend.Failure{Error: "stopped"}); err != nil {
		t.Fatal(err)
	}
	h.wantState(t, running.Job.ID, queue.StateCancelled)
	h.wantNoLease(t, QueueQ, "after the flow was cancelled")
	h.wantNoLease(t, QueueS, "after the flow was cancelled")
	if _, err := h.Client.CancelFlow(ctx, "flow_nope"); !errors.Is(err, queue.ErrFlowNotFound) {
		t.Fatalf("CancelFlow(unknown) = %v, want ErrFlowNotFound", err)
	}
}

// testFlowStall: a parent whose worker dies is rescued and run again; its
// child is released once, by the completion of the second attempt.
func testFlowStall(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	fl := h.enqueueFlow(t, chain(QueueQ, "a", "b"))
	dead := h.leaseOne(t, QueueQ)
	h.Clock.Advance(testLease + time.Second)
	if _, err := h.Backend.RescueExpired(ctx, backend.RescueRequest{}); err != nil {
		t.Fatal(err)
	}
	again := h.leaseOne(t, QueueQ)
	if again.Job.ID != dead.Job.ID {
		t.Fatalf("leased %s, want the rescued parent", again.Job.ID)
	}
	h.wantState(t, fl.Job("b").ID, queue.StateBlocked)
	if err := h.Backend.Complete(ctx, dead.Job.ID, dead.Token, nil); !errors.Is(err, queue.ErrLeaseLost) {
		t.Fatalf("stale Complete = %v, want ErrLeaseLost", err)
	}
	h.wantState(t, fl.Job("b").ID, queue.StateBlocked)
	h.complete(t, again)
	h.leaseOne(t, QueueQ)
	h.wantNoLease(t, QueueQ, "the child was released once")
}

// testFlowTenantLimit: a released child still obeys its tenant's limit.
func testFlowTenantLimit(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needTenants(t)
	h.setTenant(t, "acme", queue.TenantConfig{Limit: 1})
	fl := h.enqueueFlow(t, queue.FlowSpec{
		Nodes: []queue.FlowNode{{Name: "p", Job: spec(QueueQ, "p")},
			{Name: "c", Job: queue.JobSpec{Queue: QueueS, Kind: "c", Tenant: "acme"}}},
		Edges: []queue.FlowEdge{{Parent: "p", Child: "c"}},
	})
	busy := h.enqueue(t, queue.JobSpec{Queue: QueueS, Kind: "busy", Tenant: "acme"})
	if l := h.leaseOne(t, QueueS); l.Job.ID != busy.ID {
		t.Fatalf("leased %s, want %s", l.Job.ID, busy.ID)
	}
	h.complete(t, h.leaseOne(t, QueueQ))
	h.wantNoLease(t, QueueS, "the tenant is at its limit")
	if j := h.get(t, fl.Job("c").ID); j.State != queue.StateWaiting && j.State != queue.StateScheduled {
		t.Fatalf("released child over its tenant's limit = %s, want waiting (or not yet promoted)", j.State)
	}
}

// testFlowGroup: a group may hold a flow; a cascade that cancels the
// group's last jobs completes the group.
func testFlowGroup(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.createGroup(t, queue.GroupSpec{ID: "crawl", CompletionKind: "report", CompletionQueue: "reports"})
	fs := chain(QueueQ, "a", "b", "c")
	for i := range fs.Nodes {
		fs.Nodes[i].Job.Group = "crawl"
	}
	h.enqueueFlow(t, fs)
	h.failForGood(t, QueueQ, "boom")
	p := h.group(t, "crawl")
	if !p.Done || p.Failed != 1 || p.Cancelled != 2 {
		t.Fatalf("group = %+v, want done with 1 failed and 2 cancelled", p)
	}
	h.wantOneCompletion(t, "crawl")
}
