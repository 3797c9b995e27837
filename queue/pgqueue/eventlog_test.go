package pgqueue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/pgqueue"
	"github.com/sluicehq/sluice/queue/queuetest"
)

// openEvents opens a store with its event log on and enqueues n jobs in q.
func openEvents(t *testing.T, n int) (*pgqueue.Store, *clock.Fake, []string) {
	t.Helper()
	clk := clock.NewFake(queuetest.Epoch)
	s := openWith(t, clk, pgqueue.Options{Events: true})
	var ids []string
	for range n {
		j, err := queue.NewClient(s).Enqueue(context.Background(), queue.JobSpec{Queue: "q", Kind: "k"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	return s, clk, ids
}

// read reads every event after cursor without blocking.
func read(t *testing.T, s *pgqueue.Store, after string) backend.EventBatch {
	t.Helper()
	b, err := s.ReadEvents(context.Background(), after, 100, 0)
	if err != nil {
		t.Fatalf("ReadEvents(%q): %v", after, err)
	}
	return b
}

// TestEventLogGap checks that a reader whose cursor pruning passed is told
// of the gap, and one ahead of it is not.
func TestEventLogGap(t *testing.T) {
	ctx := context.Background()
	s, clk, _ := openEvents(t, 3)
	all := read(t, s, "")
	if len(all.Events) != 3 || all.Gap {
		t.Fatalf("first read = %d events, gap %v; want 3, no gap", len(all.Events), all.Gap)
	}
	clk.Advance(time.Hour)
	if n, err := s.PruneEvents(ctx, 24*time.Hour, 1, 0); err != nil || n != 2 {
		t.Fatalf("PruneEvents(keep 1) = %d, %v; want 2", n, err)
	}
	cases := []struct {
		name    string
		after   string
		gap     bool
		matches int
	}{
		{"from the start", "", false, 1},
		{"from a pruned event", all.Events[0].ID, true, 1},
		{"from the last pruned", all.Events[1].ID, false, 1},
		{"from the newest", all.Events[2].ID, false, 0},
	}
	for _, c := range cases {
		got := read(t, s, c.after)
		if got.Gap != c.gap || len(got.Events) != c.matches {
			t.Errorf("%s: %d events, gap %v; want %d, gap %v", c.name, len(got.Events), got.Gap, c.matches, c.gap)
		}
	}
	for _, bad := range []string{"x", "1.2", "-1", "99999999999999999999"} {
		if _, err := s.ReadEvents(ctx, bad, 1, 0); !errors.Is(err, queue.ErrInvalidArgument) {
			t.Errorf("ReadEvents(%q): %v, want ErrInvalidArgument", bad, err)
		}
	}
}

// TestEventLogCommitOrder checks that an event committed late by an older
// transaction is not skipped by a reader that already read the events of
// a newer transaction that committed first.
func TestEventLogCommitOrder(t *testing.T) {
	ctx := context.Background()
	s, _, _ := openEvents(t, 0)
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	older, err := s.EnqueueTx(ctx, tx, queue.JobSpec{Queue: "q", Kind: "k"})
	if err != nil {
		t.Fatal(err)
	}
	newer, err := queue.NewClient(s).Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k"})
	if err != nil {
		t.Fatal(err)
	}
	first := read(t, s, "")
	if len(first.Events) != 1 || first.Events[0].JobID != newer.ID {
		t.Fatalf("while the older transaction runs: %+v, want the newer one's event", first.Events)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	then := read(t, s, first.Events[0].ID)
	if len(then.Events) != 1 || then.Events[0].JobID != older[0].Job.ID || then.Gap {
		t.Fatalf("after its commit: %+v (gap %v), want the older one's event", then.Events, then.Gap)
	}
}

// TestEventLogWake checks that a blocked read is woken by the commit's
// notification, in the writer's process or another: the poll is made
// longer than the test's deadline.
func TestEventLogWake(t *testing.T) {
	defer pgqueue.SetLogPoll(time.Hour)()
	reader, _, _ := openEvents(t, 0)
	other, err := pgqueue.Open(context.Background(), pgtest.URL(t), pgqueue.Options{Schema: reader.Schema(), Events: true, MaxConns: testConns})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, w := range []struct {
		name   string
		writer *pgqueue.Store
	}{{"same store", reader}, {"other store", other}} {
		t.Run(w.name, func(t *testing.T) { wakeBy(t, reader, w.writer) })
	}
}

// wakeBy blocks in s.ReadEvents and enqueues with writer until it returns.
func wakeBy(t *testing.T, s, writer *pgqueue.Store) {
	ctx := context.Background()
	start, err := s.LastEventID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		b   backend.EventBatch
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := s.ReadEvents(ctx, start, 10, time.Minute)
		done <- result{b, err}
	}()
	// Enqueue until the reader returns: the first enqueue may commit
	// before the reader listens, and would then wait for the poll.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case r := <-done:
			if r.err != nil || len(r.b.Events) == 0 {
				t.Fatalf("ReadEvents = %+v, %v; want events", r.b, r.err)
			}
			return
		case <-tick.C:
			if _, err := queue.NewClient(writer).Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k"}); err != nil {
				t.Fatal(err)
			}
		case <-deadline:
			t.Fatal("the blocked reader was not woken within 30s")
		}
	}
}

// TestEventLogOff checks the errors of a store without its log.
func TestEventLogOff(t *testing.T) {
	s := open(t, clock.NewFake(queuetest.Epoch))
	if s.Features().Events != nil {
		t.Errorf("Features().Events is set with the log off")
	}
	if _, err := s.ReadEvents(context.Background(), "", 1, 0); !errors.Is(err, queue.ErrEventLogOff) {
		t.Errorf("ReadEvents with the log off: %v, want ErrEventLogOff", err)
	}
}

// TestEventLogClose checks that Close ends a blocked read at once (or
// refuses one that starts after it).
func TestEventLogClose(t *testing.T) {
	s, _, _ := openEvents(t, 0)
	done := make(chan error, 1)
	go func() {
		_, err := s.ReadEvents(context.Background(), "", 10, time.Hour)
		done <- err
	}()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, queue.ErrClosed) {
			t.Errorf("blocked ReadEvents after Close: %v, want ErrClosed", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a blocked ReadEvents outlived Close by 30s")
	}
}
