package queuetest

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/queue"
)

// testFlowRetryParentGroup: a parent retried by hand puts back the
// children its failure cancelled, and a child in a group comes back with
// them while its group is still open, counted again as unfinished. A child
// whose group ended meanwhile stays cancelled: the group's completion job
// has run on its count, and a group's jobs are never retried.
func testFlowRetryParentGroup(t *testing.T, f Factory) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		open  bool // another job keeps the group open
		state queue.State
	}{
		{"open", true, queue.StateBlocked},
		{"ended", false, queue.StateCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := NewHarness(t, f)
			ctx := context.Background()
			h.createGroup(t, queue.GroupSpec{ID: "crawl", CompletionKind: "report", CompletionQueue: "reports"})
			member := spec(QueueS, "member")
			member.Group = "crawl"
			fl := h.enqueueFlow(t, queue.FlowSpec{
				Nodes: []queue.FlowNode{{Name: "root", Job: spec(QueueQ, "root")}, {Name: "member", Job: member}},
				Edges: []queue.FlowEdge{{Parent: "root", Child: "member"}},
			})
			if tc.open {
				// On the root's queue, after it: the root is leased first, and
				// every router keeps a group's jobs on one backend.
				h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "keeper", Group: "crawl"})
			}
			root := h.failForGood(t, QueueQ, "boom")
			h.wantState(t, fl.Job("member").ID, queue.StateCancelled)
			if p := h.group(t, "crawl"); p.Done == tc.open || p.Cancelled != 1 {
				t.Fatalf("after the parent failed: group = %+v; want done %v with 1 cancelled", p, !tc.open)
			}
			if _, err := h.Client.Retry(ctx, root.ID); err != nil {
				t.Fatalf("Retry(root): %v", err)
			}
			h.wantState(t, fl.Job("member").ID, tc.state)
			if l := h.leaseOne(t, QueueQ); l.Job.ID != root.ID {
				t.Fatalf("leased %s (%s), want the retried parent %s", l.Job.ID, l.Job.Kind, root.ID)
			} else {
				h.completeWith(t, l, "ok")
			}
			if !tc.open {
				h.wantNoLease(t, QueueS, "its group ended before the parent was retried")
				if p := h.group(t, "crawl"); !p.Done || p.Cancelled != 1 {
					t.Fatalf("group = %+v; want done with 1 cancelled, as before the retry", p)
				}
				h.wantOneCompletion(t, "crawl")
				return
			}
			if p := h.group(t, "crawl"); p.Done || p.Cancelled != 0 {
				t.Fatalf("after the retry: group = %+v; want open with none cancelled", p)
			}
			l := h.leaseOne(t, QueueS)
			if l.Job.ID != fl.Job("member").ID {
				t.Fatalf("leased %s, want the group's child put back", l.Job.ID)
			}
			h.completeWith(t, l, "ok")
			h.completeWith(t, h.leaseOne(t, QueueQ), "ok") // the keeper
			if p := h.group(t, "crawl"); !p.Done || p.Completed != 2 || p.Cancelled != 0 {
				t.Fatalf("group = %+v; want done with 2 completed", p)
			}
			h.wantOneCompletion(t, "crawl")
		})
	}
}

// testFlowRetryDiamond: a parent retried by hand puts back a grandchild
// that waits for two of its children, counting each of them once: when
// both complete, the grandchild runs.
func testFlowRetryDiamond(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	fl := h.enqueueFlow(t, queue.FlowSpec{
		Nodes: []queue.FlowNode{{Name: "root", Job: spec(QueueQ, "root")},
			{Name: "left", Job: spec(QueueS, "left")}, {Name: "right", Job: spec(QueueS, "right")},
			{Name: "join", Job: spec(QueueB, "join")}},
		Edges: []queue.FlowEdge{{Parent: "root", Child: "left"}, {Parent: "root", Child: "right"},
			{Parent: "left", Child: "join"}, {Parent: "right", Child: "join"}},
	})
	root := h.failForGood(t, QueueQ, "boom")
	h.wantState(t, fl.Job("join").ID, queue.StateCancelled)
	if _, err := h.Client.Retry(ctx, root.ID); err != nil {
		t.Fatalf("Retry(root): %v", err)
	}
	for _, n := range []string{"left", "right", "join"} {
		h.wantState(t, fl.Job(n).ID, queue.StateBlocked)
	}
	h.completeWith(t, h.leaseOne(t, QueueQ), "ok")
	h.completeWith(t, h.leaseOne(t, QueueS), "ok")
	h.wantState(t, fl.Job("join").ID, queue.StateBlocked)
	h.completeWith(t, h.leaseOne(t, QueueS), "ok")
	if l := h.leaseOne(t, QueueB); l.Job.ID != fl.Job("join").ID {
		t.Fatalf("leased %s, want the join once both its parents completed", l.Job.ID)
	}
}
