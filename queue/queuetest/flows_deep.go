package queuetest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// DeepChainSpec is a flow of n jobs in queue "deep", each waiting for the
// one before.
func DeepChainSpec(n int) queue.FlowSpec {
	var f queue.FlowSpec
	for i := range n {
		f.Nodes = append(f.Nodes, queue.FlowNode{Name: fmt.Sprint(i), Job: queue.JobSpec{Queue: "deep", Kind: "k"}})
		if i > 0 {
			f.Edges = append(f.Edges, queue.FlowEdge{Parent: fmt.Sprint(i - 1), Child: fmt.Sprint(i)})
		}
	}
	return f
}

// DeepChain enqueues DeepChainSpec(n) on b, cancels its root and checks
// that the one call cancelled every job (the last naming its parent),
// then retries the root and checks that the one call put the other n-1
// back to blocked. It returns the flow. A store whose cascade has a bound
// runs it at that bound; the others run it deeper than any nesting would
// allow. It needs queue.CapFlows, CapRetry and CapStats.
func DeepChain(t *testing.T, b backend.Backend, n int) *queue.Flow {
	t.Helper()
	ctx := context.Background()
	c := queue.NewClient(b)
	fl, err := c.EnqueueFlow(ctx, DeepChainSpec(n))
	if err != nil {
		t.Fatalf("EnqueueFlow(%d deep): %v", n, err)
	}
	if _, err := c.Cancel(ctx, fl.Jobs[0].ID); err != nil {
		t.Fatalf("Cancel(root of %d): %v", n, err)
	}
	wantDeep(t, b, queue.StateCancelled, int64(n))
	last, err := b.Get(ctx, fl.Jobs[n-1].ID)
	if err != nil || !strings.Contains(last.LastError, fl.Jobs[n-2].ID) {
		t.Fatalf("last job = %+v, %v; want cancelled naming its parent", last, err)
	}
	if _, err := c.Retry(ctx, fl.Jobs[0].ID); err != nil {
		t.Fatalf("Retry(root of %d): %v", n, err)
	}
	wantDeep(t, b, queue.StateBlocked, int64(n-1))
	return fl
}

// wantDeep checks that queue "deep" has n jobs in state st.
func wantDeep(t *testing.T, b backend.Backend, st queue.State, n int64) {
	t.Helper()
	stats, err := b.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range stats {
		if q.Queue == "deep" && q.Counts[st] == n {
			return
		}
	}
	t.Fatalf("Stats = %+v; want %d jobs %s in queue deep", stats, n, st)
}
