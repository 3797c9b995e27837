package mux_test

import (
	"testing"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/amqptest"
	"github.com/sluicehq/sluice/queue"
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
	queuetest.Run(t, func(t *testing.T, clk clock.Clock) queue.Backend {
		return newMux(t, openSQLite(t, clk, sqlitequeue.Options{}), mux.Route{
			Name: "second", Backend: openSQLite(t, clk, sqlitequeue.Options{}),
			Queues: []string{queuetest.QueueMail, queuetest.QueueX, queuetest.QueueA, queuetest.QueueR, queuetest.QueueW, queuetest.QueueC},
		})
	})
}

// laneQueues are the suite's queues the lane run places on the lane.
var laneQueues = []string{
	queuetest.QueueQ, queuetest.QueueMail, queuetest.QueueX, queuetest.QueueR, queuetest.QueueW,
	queuetest.QueueC, queuetest.QueueB, queuetest.QueueP, queuetest.QueueS,
}

// TestConformanceLane runs the suite on a router over SQLite (the default)
// and the RabbitMQ lane. The suite skips the tests that need what the lane
// lacks (it asks what every routed backend has).
func TestConformanceLane(t *testing.T) {
	amqptest.URL(t, "the tests on the RabbitMQ lane")
	queuetest.Run(t, func(t *testing.T, clk clock.Clock) queue.Backend {
		return newMux(t, openSQLite(t, clk, sqlitequeue.Options{}), mux.Route{
			Name: "rabbitmq", Backend: openLane(t, clk, laneQueues), Queues: laneQueues,
		})
	})
}

// TestConformanceOutbox runs the outbox suite through a router whose
// default records events: the router forwards queue.Outbox to it.
func TestConformanceOutbox(t *testing.T) {
	queuetest.RunOutbox(t, func(t *testing.T, clk clock.Clock) queue.Backend {
		return newMux(t, openSQLite(t, clk, sqlitequeue.Options{Outbox: true}), mux.Route{
			Name: "second", Backend: openSQLite(t, clk, sqlitequeue.Options{}), Queues: []string{queuetest.QueueMail, queuetest.QueueX},
		})
	})
}
