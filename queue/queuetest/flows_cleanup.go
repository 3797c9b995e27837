package queuetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// testFlowCleanup: once the cleaner has deleted every job of a flow, the
// flow's own record goes too (Flow answers ErrFlowNotFound); a flow with a
// job left keeps it.
func testFlowCleanup(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	done := h.enqueueFlow(t, chain(QueueQ, "a", "b"))
	for range 2 {
		h.completeWith(t, h.leaseOne(t, QueueQ), "ok")
	}
	kept := h.enqueueFlow(t, chain(QueueQ, "c", "d"))
	h.completeWith(t, h.leaseOne(t, QueueQ), "ok") // d waits for c: not final
	h.Clock.Advance(25 * time.Hour)
	h.cleanup(t, 100)
	if _, err := h.Client.Flow(ctx, done.ID); !errors.Is(err, queue.ErrFlowNotFound) {
		t.Errorf("Flow of a flow whose jobs were all deleted = %v, want ErrFlowNotFound", err)
	}
	fl, err := h.Client.Flow(ctx, kept.ID)
	if err != nil || len(fl.Jobs) != 1 {
		t.Fatalf("Flow of a flow with a job left = %+v, %v; want it with its one job", fl, err)
	}
}
