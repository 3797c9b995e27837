package queuetest

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// testQueuePauseInStats: Stats reports a queue's pause while it is in
// force, and not once it ends or is lifted. A paused queue without jobs
// (here one that never had any) is listed too, with no counts: an
// operator must see the pause to lift it. Once its pause is over it has
// nothing to show and leaves the list.
func testQueuePauseInStats(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needTenants(t)
	ctx := context.Background()
	h.enqueue(t, queue.JobSpec{Queue: QueueA, Kind: "k"})
	h.enqueue(t, queue.JobSpec{Queue: QueueB, Kind: "k"})
	stats := func() map[string]queue.QueueStats {
		t.Helper()
		st, err := h.Backend.Stats(ctx)
		if err != nil {
			t.Fatalf("Stats: %v", err)
		}
		out := map[string]queue.QueueStats{}
		for _, s := range st {
			out[s.Queue] = s
		}
		return out
	}
	until, err := h.Client.BackOff(ctx, queue.QueueScope(QueueA), time.Hour)
	if err != nil {
		t.Fatalf("BackOff: %v", err)
	}
	idleUntil, err := h.Client.BackOff(ctx, queue.QueueScope("idle"), time.Hour)
	if err != nil {
		t.Fatalf("BackOff idle: %v", err)
	}
	steps := []struct {
		name      string
		do        func()
		want      time.Time
		wantIdle  time.Time
		idleShown bool
	}{
		{"paused", func() {}, until, idleUntil, true},
		{"half way", func() { h.Clock.Advance(30 * time.Minute) }, until, idleUntil, true},
		{"ended", func() { h.Clock.Advance(31 * time.Minute) }, time.Time{}, time.Time{}, false},
		{"lifted", func() {
			for _, q := range []string{QueueA, "idle"} {
				if _, err := h.Client.BackOff(ctx, queue.QueueScope(q), time.Hour); err != nil {
					t.Fatal(err)
				}
				if _, err := h.Client.BackOff(ctx, queue.QueueScope(q), 0); err != nil {
					t.Fatal(err)
				}
			}
		}, time.Time{}, time.Time{}, false},
	}
	for _, s := range steps {
		s.do()
		got := stats()
		if !sameTime(got[QueueA].PausedUntil, s.want) || !got[QueueB].PausedUntil.IsZero() {
			t.Errorf("%s: PausedUntil a = %v, b = %v; want a = %v, b zero", s.name, got[QueueA].PausedUntil, got[QueueB].PausedUntil, s.want)
		}
		idle, shown := got["idle"]
		if shown != s.idleShown || !sameTime(idle.PausedUntil, s.wantIdle) {
			t.Errorf("%s: queue without jobs listed = %v, PausedUntil %v; want listed = %v, PausedUntil %v",
				s.name, shown, idle.PausedUntil, s.idleShown, s.wantIdle)
		}
		for st, n := range idle.Counts {
			if n != 0 {
				t.Errorf("%s: queue without jobs counts %d %s", s.name, n, st)
			}
		}
	}
}
