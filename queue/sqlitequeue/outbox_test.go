package sqlitequeue_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

func openOutbox(t testing.TB, clk clock.Clock) *sqlitequeue.Backend {
	t.Helper()
	b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "queue.db"), sqlitequeue.Options{Clock: clk, Outbox: true})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestOutboxConformance(t *testing.T) {
	queuetest.RunOutbox(t, func(t *testing.T, clk clock.Clock) backend.Backend { return openOutbox(t, clk) })
}

// TestOutboxOff checks that a backend opened without the outbox records
// nothing and says so, rather than letting a consumer wait forever.
func TestOutboxOff(t *testing.T) {
	t.Parallel()
	b := open(t, nil)
	ctx := context.Background()
	j, err := queue.NewClient(b).Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k"})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, WorkerID: "w", Max: 1, LeaseFor: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("Lease: %v", err)
	}
	if err := b.Complete(ctx, j.ID, ls[0].Token, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ClaimEvents(ctx, 10, time.Minute); !errors.Is(err, queue.ErrOutboxOff) {
		t.Fatalf("ClaimEvents with the outbox off: %v, want ErrOutboxOff", err)
	}
}
