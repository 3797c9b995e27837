package sqlitequeue_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// Stats reports a queue's pause while it is in force, and no longer once
// it ends or is lifted.
func TestStatsPausedUntil(t *testing.T) {
	t.Parallel()
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "q.db"), sqlitequeue.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	c := queue.NewClient(b)
	for _, q := range []string{"a", "b"} {
		if _, err := c.Enqueue(ctx, queue.JobSpec{Queue: q, Kind: "k"}); err != nil {
			t.Fatal(err)
		}
	}
	paused := func() map[string]time.Time {
		t.Helper()
		st, err := b.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]time.Time{}
		for _, s := range st {
			out[s.Queue] = s.PausedUntil
		}
		return out
	}
	until, err := b.Pause(ctx, queue.QueueScope("a"), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		do   func()
		a    time.Time
	}{
		{"paused", func() {}, until},
		{"half way", func() { clk.Advance(30 * time.Minute) }, until},
		{"ended", func() { clk.Advance(31 * time.Minute) }, time.Time{}},
		{"resumed", func() {
			if _, err := b.Pause(ctx, queue.QueueScope("a"), time.Hour); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Pause(ctx, queue.QueueScope("a"), 0); err != nil {
				t.Fatal(err)
			}
		}, time.Time{}},
	}
	for _, s := range steps {
		s.do()
		got := paused()
		if !got["a"].Equal(s.a) || !got["b"].IsZero() {
			t.Errorf("%s: PausedUntil a = %v, b = %v; want %v and zero", s.name, got["a"], got["b"], s.a)
		}
	}
}

// Resuming a queue wakes its idle workers: its pending jobs are leasable
// again at once.
func TestResumeWakesWorkers(t *testing.T) {
	t.Parallel()
	b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "q.db"), sqlitequeue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	if _, err := b.Pause(ctx, queue.QueueScope("a"), time.Hour); err != nil {
		t.Fatal(err)
	}
	ch, stop := b.Subscribe([]string{"a"})
	defer stop()
	select { // a value left from before the subscription does not count
	case <-ch:
	default:
	}
	if _, err := b.Pause(ctx, queue.QueueScope("a"), 0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no wake-up after the queue was resumed")
	}
}
