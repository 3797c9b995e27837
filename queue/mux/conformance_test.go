package mux_test

import (
	"testing"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/mux"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// TestConformanceTwoSQLite runs the suite on a router over two SQLite
// backends. The routed queues are ones the suite uses alone and together
// with default ones (a batch over QueueMail and QueueOther, a lease over
// QueueX and QueueZ), so calls cross backends; the queues of groups and
// tenants stay on the default, which holds their settings.
func TestConformanceTwoSQLite(t *testing.T) {
	queuetest.Run(t, func(t *testing.T, clk clock.Clock) backend.Backend {
		return newMux(t, openSQLite(t, clk, sqlitequeue.Options{}), mux.Route{
			Name: "second", Backend: openSQLite(t, clk, sqlitequeue.Options{}),
			Queues: []string{queuetest.QueueMail, queuetest.QueueX, queuetest.QueueA, queuetest.QueueR, queuetest.QueueW, queuetest.QueueC},
		})
	})
}

// TestConformanceOutbox runs the outbox suite through a router whose
// default records events: the router forwards backend.Outbox to it.
func TestConformanceOutbox(t *testing.T) {
	queuetest.RunOutbox(t, func(t *testing.T, clk clock.Clock) backend.Backend {
		return newMux(t, openSQLite(t, clk, sqlitequeue.Options{Outbox: true}), mux.Route{
			Name: "second", Backend: openSQLite(t, clk, sqlitequeue.Options{}), Queues: []string{queuetest.QueueMail, queuetest.QueueX},
		})
	})
}
