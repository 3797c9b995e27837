package queuetest

import (
	"context"
	"errors"
	"testing"

	"github.com/sluicehq/sluice/queue"
)

// testFlowTenantBacklog: a flow's ready node counts towards its tenant's
// backlog as a plain enqueue does: over the cap, the flow is refused
// whole, storing nothing. A node that waits for a parent is not in the
// backlog yet, so a flow whose tenant's only node waits is taken.
func testFlowTenantBacklog(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needTenants(t)
	h.setTenant(t, "a", queue.TenantConfig{Limit: 1, Backlog: 2})
	h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "a"})
	h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "a"})
	before := h.tenant(t, "a")
	flow := queue.FlowSpec{
		Nodes: []queue.FlowNode{
			{Name: "root", Job: queue.JobSpec{Queue: QueueQ, Kind: "root", Tenant: "a"}},
			{Name: "leaf", Job: queue.JobSpec{Queue: QueueQ, Kind: "leaf"}},
		},
		Edges: []queue.FlowEdge{{Parent: "root", Child: "leaf"}},
	}
	_, err := h.Client.EnqueueFlow(context.Background(), flow)
	var full *queue.BacklogFullError
	if !errors.Is(err, queue.ErrBacklogFull) || !errors.As(err, &full) || full.Tenant != "a" || full.Cap != 2 {
		t.Fatalf("EnqueueFlow with a ready node over its tenant's backlog = %v, want a *BacklogFullError for a, cap 2", err)
	}
	h.wantTenant(t, "a", before.Pending, before.Waiting, before.Active)
	if ls := h.lease(t, 10, QueueQ); len(ls) != 1 || ls[0].Job.Tenant != "a" || ls[0].Job.Kind != "k" {
		t.Fatalf("leased %d jobs after the refused flow, want only the tenant's first job", len(ls))
	}
	// The tenant's node waits for a parent of no tenant: taken.
	flow.Nodes[0].Job.Tenant, flow.Nodes[1].Job.Tenant = "", "a"
	h.enqueueFlow(t, flow)
}
