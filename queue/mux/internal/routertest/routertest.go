// Package routertest opens what the router's tests route between: SQLite
// backends, RabbitMQ lanes and routers over them, each closed when its
// test ends. Its own tests run the conformance suite through a router onto
// the RabbitMQ lane, in a test binary apart from package mux's, so the two
// long suites do not share one time limit.
package routertest

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/amqptest"
	"github.com/sluicehq/sluice/queue/amqpqueue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/mux"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// OpenSQLite opens a fresh SQLite backend on clk, closed when t ends.
func OpenSQLite(t testing.TB, clk clock.Clock, opts sqlitequeue.Options) *sqlitequeue.Backend {
	t.Helper()
	opts.Clock = clk
	b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), opts)
	if err != nil {
		t.Fatalf("sqlitequeue.Open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// NewMux builds a router or fails the test.
func NewMux(t testing.TB, def backend.Backend, routes ...mux.Route) *mux.Backend {
	t.Helper()
	m, err := mux.New(def, routes...)
	if err != nil {
		t.Fatalf("mux.New: %v", err)
	}
	return m
}

// OpenLane opens a lane with a prefix no other test uses and deletes the
// broker queues of queues when t ends. It skips t when no broker is set.
func OpenLane(t testing.TB, clk clock.Clock, queues []string) *amqpqueue.Backend {
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
