package sqlitequeue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// TestFlowDepthLimit: a chain as deep as MaxFlowDepth is stored, and a job
// that would be one generation deeper is refused at enqueue, whether in a
// flow or by DependsOn, and nothing of its call is stored.
func TestFlowDepthLimit(t *testing.T) {
	t.Parallel()
	b := open(t, nil)
	ctx := context.Background()
	c := queue.NewClient(b)
	n := sqlitequeue.MaxFlowDepth + 1 // the last job has MaxFlowDepth generations of parents
	fl, err := c.EnqueueFlow(ctx, queuetest.DeepChainSpec(n))
	if err != nil {
		t.Fatalf("EnqueueFlow(%d deep): %v", n, err)
	}
	var ie *queue.InvalidArgumentError
	_, err = c.EnqueueFlow(ctx, queuetest.DeepChainSpec(n+1))
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
}

// TestFlowDeepestChainSettles: a chain as deep as MaxFlowDepth is
// cancelled in the one step that cancels its root and put back by the one
// retry of that root, its triggers nested as deep as the bound allows.
func TestFlowDeepestChainSettles(t *testing.T) {
	testutil.NeedFull(t, "settling a chain as deep as MaxFlowDepth")
	t.Parallel()
	queuetest.DeepChain(t, open(t, nil), sqlitequeue.MaxFlowDepth+1)
}

// count is how many jobs of queue "deep" are in state st.
func count(t *testing.T, b backend.Backend, st queue.State) int64 {
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
