package queuetest

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// testQueuePauseInStats: Stats reports a queue's pause while it is in
// force (also for a paused queue without jobs), and not once it ends or is
// lifted.
func testQueuePauseInStats(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needTenants(t)
	ctx := context.Background()
	h.enqueue(t, queue.JobSpec{Queue: QueueA, Kind: "k"})
	h.enqueue(t, queue.JobSpec{Queue: QueueB, Kind: "k"})
	paused := func() map[string]time.Time {
		t.Helper()
		st, err := h.Backend.Stats(ctx)
		if err != nil {
			t.Fatalf("Stats: %v", err)
		}
		out := map[string]time.Time{}
		for _, s := range st {
			out[s.Queue] = s.PausedUntil
		}
		return out
	}
	until, err := h.Client.BackOff(ctx, queue.QueueScope(QueueA), time.Hour)
	if err != nil {
		t.Fatalf("BackOff: %v", err)
	}
	steps := []struct {
		name string
		do   func()
		want time.Time
	}{
		{"paused", func() {}, until},
		{"half way", func() { h.Clock.Advance(30 * time.Minute) }, until},
		{"ended", func() { h.Clock.Advance(31 * time.Minute) }, time.Time{}},
		{"lifted", func() {
			if _, err := h.Client.BackOff(ctx, queue.QueueScope(QueueA), time.Hour); err != nil {
				t.Fatal(err)
			}
			if _, err := h.Client.BackOff(ctx, queue.QueueScope(QueueA), 0); err != nil {
				t.Fatal(err)
			}
		}, time.Time{}},
	}
	for _, s := range steps {
		s.do()
		got := paused()
		if !sameTime(got[QueueA], s.want) || !got[QueueB].IsZero() {
			t.Errorf("%s: PausedUntil a = %v, b = %v; want a = %v, b zero", s.name, got[QueueA], got[QueueB], s.want)
		}
	}
}
