package mux_test

import (
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/amqptest"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/amqpqueue"
	"github.com/sluicehq/sluice/queue/mux"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openSQLite opens a fresh SQLite backend on clk, closed when t ends.
func openSQLite(t testing.TB, clk clock.Clock, opts sqlitequeue.Options) *sqlitequeue.Backend {
	t.Helper()
	opts.Clock = clk
	b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), opts)
	if err != nil {
		t.Fatalf("sqlitequeue.Open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// newMux builds a router or fails the test.
func newMux(t testing.TB, def queue.Backend, routes ...mux.Route) *mux.Backend {
	t.Helper()
	m, err := mux.New(def, routes...)
	if err != nil {
		t.Fatalf("mux.New: %v", err)
	}
	return m
}

// openLane opens a lane with a prefix no other test uses and deletes the
// broker queues of queues when t ends.
func openLane(t testing.TB, clk clock.Clock, queues []string) *amqpqueue.Backend {
	t.Helper()
	u := amqptest.URL(t, "the tests on the RabbitMQ lane")
	prefix := amqptest.Prefix(t, u, "mux", queues...)
	b, err := amqpqueue.New(u, amqpqueue.Options{Prefix: prefix, Clock: clk, LeaseWait: 300 * time.Millisecond, ConnectionName: "sluice-test " + prefix})
	if err != nil {
		t.Fatalf("amqpqueue.New: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}
