package queuetest

import (
	"context"
	"errors"
	"testing"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// testFlowRetryChild: a child retried by hand while a parent holds it back
// is refused, naming the parent and its state, and stays as it was: its
// failed parent is what to retry, and that retry puts it back. A child that
// runs anyway (OnParentFailure "run") is retried whatever its parent's
// end; a child cancelled while its parent is still to run is refused until
// the parent has completed, and then runs.
func testFlowRetryChild(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	fl := h.enqueueFlow(t, parentFailFlow())
	root := h.failForGood(t, QueueQ, "boom")
	child := fl.Job("cancelled").ID
	h.wantState(t, child, queue.StateCancelled)
	wantHeldBack(t, h, child, root.ID, queue.StateCancelled, queue.StateFailed)
	h.wantState(t, child, queue.StateCancelled)
	wantHeldBack(t, h, fl.Job("grand").ID, child, queue.StateCancelled, queue.StateCancelled)

	runs := h.leaseOne(t, QueueS)
	if runs.Job.ID != fl.Job("runs").ID {
		t.Fatalf("leased %s, want the run-anyway child (the cancelled one stays cancelled)", runs.Job.ID)
	}
	if _, err := h.Backend.Fail(ctx, runs.Job.ID, runs.Token, backend.Failure{Error: "x", Permanent: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Client.Retry(ctx, runs.Job.ID); err != nil {
		t.Fatalf("Retry(run-anyway child of a failed parent): %v", err)
	}
	h.completeWith(t, h.leaseOne(t, QueueS), "ran again")

	if _, err := h.Client.Retry(ctx, root.ID); err != nil {
		t.Fatalf("Retry(root): %v", err)
	}
	h.wantState(t, child, queue.StateBlocked)
	if _, err := h.Client.Cancel(ctx, child); err != nil {
		t.Fatalf("Cancel(blocked child): %v", err)
	}
	wantHeldBack(t, h, child, root.ID, queue.StateCancelled, queue.StatePending)
	h.completeWith(t, h.leaseOne(t, QueueQ), "ok")
	if _, err := h.Client.Retry(ctx, child); err != nil {
		t.Fatalf("Retry(child once its parent completed): %v", err)
	}
	if l := h.leaseOne(t, QueueS); l.Job.ID != child {
		t.Fatalf("leased %s, want the retried child %s", l.Job.ID, child)
	}
}

// wantHeldBack checks that Retry(id) is refused for parent in state
// parentState, with a *NotRetryableError that says so.
func wantHeldBack(t *testing.T, h *Harness, id, parent string, state, parentState queue.State) {
	t.Helper()
	_, err := h.Client.Retry(context.Background(), id)
	var nr *queue.NotRetryableError
	if !errors.As(err, &nr) || !errors.Is(err, queue.ErrParentNotCompleted) || nr.ID != id ||
		nr.Parent != parent || nr.ParentState != parentState || nr.State != state {
		t.Fatalf("Retry(%s) = %v (%+v); want a NotRetryableError for parent %s, %s", id, err, nr, parent, parentState)
	}
}
