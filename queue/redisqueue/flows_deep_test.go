package redisqueue_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// TestFlowDeepChain: a chain of 1,500 jobs is cancelled in the one script
// that cancels its root and put back by the one retry of that root. The
// settling goes generation by generation, not nested, so it fits the Lua
// stack of miniredis's Lua too, which stops a few hundred calls deep.
func TestFlowDeepChain(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			b := srv.open(t).backend(t, redisqueue.Options{})
			ctx := context.Background()
			const n = 1500
			var f queue.FlowSpec
			for i := range n {
				f.Nodes = append(f.Nodes, queue.FlowNode{Name: fmt.Sprint(i), Job: queue.JobSpec{Queue: "deep", Kind: "k"}})
				if i > 0 {
					f.Edges = append(f.Edges, queue.FlowEdge{Parent: fmt.Sprint(i - 1), Child: fmt.Sprint(i)})
				}
			}
			c := queue.NewClient(b)
			fl, err := c.EnqueueFlow(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Cancel(ctx, fl.Jobs[0].ID); err != nil {
				t.Fatalf("Cancel(root): %v", err)
			}
			if j, err := b.Get(ctx, fl.Jobs[n-1].ID); err != nil || j.State != queue.StateCancelled {
				t.Fatalf("last job = %v, %v; want cancelled", j, err)
			}
			if _, err := c.Retry(ctx, fl.Jobs[0].ID); err != nil {
				t.Fatalf("Retry(root): %v", err)
			}
			if j, err := b.Get(ctx, fl.Jobs[n-1].ID); err != nil || j.State != queue.StateBlocked {
				t.Fatalf("last job = %v, %v; want blocked", j, err)
			}
		})
	}
}
