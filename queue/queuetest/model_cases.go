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
