package pgqueue_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/pgqueue"
	"github.com/sluicehq/sluice/queue/queuetest"
)

func TestOutbox(t *testing.T) {
	queuetest.RunOutbox(t, func(t *testing.T, clk clock.Clock) backend.Backend {
		return openWith(t, clk, pgqueue.Options{Outbox: true})
	})
}

// TestOutboxTrigger checks that the outbox follows the last store to open
// the schema, and that a transition made by plain SQL, outside the
// store's code, records its event in its own transaction.
func TestOutboxTrigger(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(queuetest.Epoch)
	on := openWith(t, clk, pgqueue.Options{Outbox: true})
	j, err := queue.NewClient(on).Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k"})
	if err != nil {
		t.Fatal(err)
	}
	// A rolled-back transition leaves no event; a committed one does.
	finish := qualifyTest(`UPDATE __schema__.jobs SET state = 'cancelled', finished_at = 1, updated_at = 1 WHERE id = $1`, on.Schema())
	tx, err := on.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, finish, j.ID); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got := claimN(t, on); got != 0 {
		t.Fatalf("after a rollback: %d events, want 0", got)
	}
	if _, err := on.Pool().Exec(ctx, finish, j.ID); err != nil {
		t.Fatal(err)
	}
	if got := claimN(t, on); got != 1 {
		t.Fatalf("after a committed cancel by SQL: %d events, want 1", got)
	}
	// A job stored final at once (as a dependent of a failed job may be).
	store := qualifyTest(`INSERT INTO __schema__.jobs (queue, kind, max_attempts, state, created_at, updated_at, finished_at)
		VALUES ('q', 'k', 1, 'cancelled', 1, 1, 1)`, on.Schema())
	if _, err := on.Pool().Exec(ctx, store); err != nil {
		t.Fatal(err)
	}
	if got := claimN(t, on); got != 1 {
		t.Fatalf("after a job was stored cancelled: %d events, want 1", got)
	}

	// A store opening the schema with the outbox off turns it off.
	off, err := pgqueue.Open(ctx, pgtest.URL(t), pgqueue.Options{Schema: on.Schema(), Clock: clk, MaxConns: testConns})
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	if f := off.Features(); f.Outbox != nil {
		t.Errorf("Features().Outbox = %v with the outbox off, want nil", f.Outbox)
	}
	if _, err := off.ClaimEvents(ctx, 1, time.Minute); !errors.Is(err, queue.ErrOutboxOff) {
		t.Errorf("ClaimEvents with the outbox off: %v, want ErrOutboxOff", err)
	}
	k, err := queue.NewClient(off).Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := off.Cancel(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if got := claimN(t, on); got != 0 {
		t.Fatalf("a cancel with the outbox off recorded %d events, want 0", got)
	}
}

// claimN claims every due event of s and returns how many there were.
func claimN(t *testing.T, s *pgqueue.Store) int {
	t.Helper()
	cs, err := s.ClaimEvents(context.Background(), 100, time.Minute)
	if err != nil {
		t.Fatalf("ClaimEvents: %v", err)
	}
	return len(cs)
}

// qualifyTest puts the quoted schema in place of __schema__ in query.
func qualifyTest(query, schema string) string {
	return strings.ReplaceAll(query, "__schema__", pgx.Identifier{schema}.Sanitize())
}
