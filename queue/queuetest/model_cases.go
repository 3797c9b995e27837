package queuetest

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// Cases the model test found, kept as plain tests.

// testGroupPauseEnded checks that a group's pause is reported only while
// it is in force (GroupProgress.PausedUntil), as a tenant's is.
func testGroupPauseEnded(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needTenants(t)
	h.needGroups(t)
	ctx := context.Background()
	h.createGroup(t, queue.GroupSpec{ID: "paused"})
	until, err := h.Client.BackOff(ctx, queue.GroupScope("paused"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.group(t, "paused").PausedUntil; !got.Equal(until) {
		t.Fatalf("PausedUntil = %s during the pause, want %s", got, until)
	}
	h.Clock.Advance(time.Second)
	if got := h.group(t, "paused").PausedUntil; !got.IsZero() {
		t.Errorf("PausedUntil = %s once the pause has ended, want zero", got)
	}
}

// testGroupDoneBeforeTTL checks that a group whose last job fails for its
// tenant's MaxWait in the same Lease in which the group's TTL runs out is
// done with that failure, not cancel-requested: the failure came first.
func testGroupDoneBeforeTTL(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needTenants(t)
	h.needGroups(t)
	h.setTenant(t, "slow", queue.TenantConfig{Limit: 1, MaxWait: time.Second})
	h.createGroup(t, queue.GroupSpec{ID: "short", TTL: 2 * time.Second})
	h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "slow"})
	h.leaseOne(t, QueueQ)
	waiting := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "slow", Group: "short"})
	h.wantState(t, waiting.ID, queue.StateWaiting)
	h.Clock.Advance(3 * time.Second)
	h.lease(t, 1, QueueQ)
	h.wantState(t, waiting.ID, queue.StateFailed)
	g := h.group(t, "short")
	if got := [3]any{g.Done, g.Failed, g.CancelRequested}; got != [3]any{true, int64(1), false} {
		t.Errorf("group (Done, Failed, CancelRequested) = %v, want [true 1 false]", got)
	}
}
