package sqlitequeue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// chain is a flow of n jobs in queue "deep", each waiting for the one
// before.
func chain(n int) queue.FlowSpec {
	var f queue.FlowSpec
	for i := range n {
		f.Nodes = append(f.Nodes, queue.FlowNode{Name: fmt.Sprint(i), Job: queue.JobSpec{Queue: "deep", Kind: "k"}})
		if i > 0 {
			f.Edges = append(f.Edges, queue.FlowEdge{Parent: fmt.Sprint(i - 1), Child: fmt.Sprint(i)})
		}
	}
	return f
}

// TestFlowDepthLimit: a chain as deep as MaxFlowDepth is cancelled in the
// one step that cancels its root and put back by the one retry of that
// root; a job that would be one generation deeper is refused at enqueue,
// whether in a flow or by DependsOn, and nothing of its call is stored.
func TestFlowDepthLimit(t *testing.T) {
	t.Parallel()
	b := open(t, nil)
	ctx := context.Background()
	c := queue.NewClient(b)
	n := sqlitequeue.MaxFlowDepth + 1 // the last job has MaxFlowDepth generations of parents
	fl, err := c.EnqueueFlow(ctx, chain(n))
	if err != nil {
		t.Fatalf("EnqueueFlow(%d deep): %v", n, err)
	}
	var ie *queue.InvalidArgumentError
	_, err = c.EnqueueFlow(ctx, chain(n+1))
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "DependsOn") || !strings.Contains(err.Error(), fmt.Sprintf("nodes[%d]", n)) {
		t.Fatalf("EnqueueFlow(%d deep) = %v; want an *InvalidArgumentError naming nodes[%d] and DependsOn", n+1, err, n)
	}
	_, err = c.Enqueue(ctx, queue.JobSpec{Queue: "deep", Kind: "k", DependsOn: []string{fl.Jobs[n-1].ID}})
	if !errors.As(err, &ie) || ie.Field != "JobSpec.DependsOn" {
		t.Fatalf("Enqueue below the deepest job = %v; want an *InvalidArgumentError naming JobSpec.DependsOn", err)
	}
	if got := count(t, b, queue.StateBlocked); got != int64(n-1) {
		t.Fatalf("%d jobs blocked after the refusals, want %d (the refused calls stored nothing)", got, n-1)
	}
	if _, err := c.Cancel(ctx, fl.Jobs[0].ID); err != nil {
		t.Fatalf("Cancel(root of %d): %v", n, err)
	}
	if got := count(t, b, queue.StateCancelled); got != int64(n) {
		t.Fatalf("%d jobs cancelled, want all %d", got, n)
	}
	if _, err := c.Retry(ctx, fl.Jobs[0].ID); err != nil {
		t.Fatalf("Retry(root of %d): %v", n, err)
	}
	if got := count(t, b, queue.StateBlocked); got != int64(n-1) {
		t.Fatalf("%d jobs blocked after the retry, want %d", got, n-1)
	}
}

// count is how many jobs of queue "deep" are in state st.
func count(t *testing.T, b queue.Backend, st queue.State) int64 {
	t.Helper()
	stats, err := b.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range stats {
		if q.Queue == "deep" {
			return q.Counts[st]
		}
	}
	return 0
}
