package redisqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// logFive opens a backend with its event log on, enqueues five jobs and
// returns it with the ids of their five job.enqueued events.
func logFive(t *testing.T, s server, clk clock.Clock) (*redisqueue.Backend, []string) {
	t.Helper()
	ctx := context.Background()
	b := s.backend(t, redisqueue.Options{Events: true, Clock: clk})
	c := queue.NewClient(b)
	for range 5 {
		mustEnqueue(t, c, queue.JobSpec{Queue: "q", Kind: "k"})
	}
	batch, err := b.ReadEvents(ctx, "", 10, 0)
	if err != nil || len(batch.Events) != 5 || batch.Gap {
		t.Fatalf("ReadEvents = %d events, gap %v, %v; want 5 without a gap", len(batch.Events), batch.Gap, err)
	}
	ids := make([]string, 5)
	for i, e := range batch.Events {
		ids[i] = e.ID
	}
	return b, ids
}

// TestReadEventsReportsTrimmedGap trims the log to its newest two events:
// a reader resuming before what was trimmed is told (Gap), one resuming
// at or after the oldest kept is not, and a subscription resuming there
// says so too.
func TestReadEventsReportsTrimmedGap(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		ctx := context.Background()
		b, ids := logFive(t, s, nil)
		if _, err := b.PruneEvents(ctx, time.Hour, 2, 0); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name, after string
			events      int
			gap         bool
		}{
			{"from the oldest kept", "", 2, false},
			{"two trimmed after the cursor", ids[0], 2, true},
			{"one trimmed after the cursor", ids[1], 2, true},
			{"at the newest", ids[4], 0, false},
			{"at the oldest kept", ids[3], 1, false},
		}
		for _, c := range cases {
			for _, block := range []time.Duration{0, time.Millisecond} {
				got, err := b.ReadEvents(ctx, c.after, 10, block)
				if err != nil || len(got.Events) != c.events || got.Gap != c.gap {
					t.Errorf("%s (block %v): ReadEvents = %d events, gap %v, %v; want %d, gap %v",
						c.name, block, len(got.Events), got.Gap, err, c.events, c.gap)
				}
			}
		}

		sub, err := queue.NewClient(b).Subscribe(ctx, queue.EventFilter{After: ids[0]})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		for _, want := range ids[3:] {
			select {
			case e := <-sub.Events():
				if e.ID != want {
					t.Fatalf("subscription got %s, want %s", e.ID, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("subscription did not replay %s", want)
			}
		}
		if !sub.Gap() {
			t.Error("subscription resuming before trimmed events: Gap() = false, want true")
		}
	})
}

// TestReadEventsGapWhenAllTrimmed prunes every event: a cursor before the
// last of them has a gap and nothing to read.
func TestReadEventsGapWhenAllTrimmed(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		ctx := context.Background()
		// Redis stamps ids with its own time; a clock a day ahead makes
		// every entry older than the hour pruned.
		clk := clock.NewFake(time.Now().Add(24 * time.Hour))
		b, ids := logFive(t, s, clk)
		if _, err := b.PruneEvents(ctx, time.Hour, 0, 0); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			after string
			gap   bool
		}{{ids[1], true}, {ids[4], false}} {
			got, err := b.ReadEvents(ctx, c.after, 10, 0)
			if err != nil || len(got.Events) != 0 || got.Gap != c.gap {
				t.Errorf("after %s: ReadEvents = %d events, gap %v, %v; want none, gap %v", c.after, len(got.Events), got.Gap, err, c.gap)
			}
		}
	})
}
