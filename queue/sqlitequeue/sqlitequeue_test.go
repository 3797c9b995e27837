package sqlitequeue_test

import (
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/internal/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

func open(t testing.TB, clk clock.Clock) *sqlitequeue.Backend {
	t.Helper()
	b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "queue.db"), sqlitequeue.Options{Clock: clk})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestConformance(t *testing.T) {
	queuetest.Run(t, func(t *testing.T, clk clock.Clock) queue.Backend { return open(t, clk) })
}
