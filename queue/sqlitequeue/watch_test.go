package sqlitequeue_test

import (
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

func TestWatchConformance(t *testing.T) {
	queuetest.RunWatch(t, func(t *testing.T, clk clock.Clock) backend.Backend {
		b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "queue.db"), sqlitequeue.Options{Clock: clk, Events: true})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	})
}
