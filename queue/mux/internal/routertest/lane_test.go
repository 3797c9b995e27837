package routertest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/amqptest"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/mux"
	"github.com/sluicehq/sluice/queue/mux/internal/routertest"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// laneQueues are the suite's queues the lane run places on the lane.
var laneQueues = []string{
	queuetest.QueueQ, queuetest.QueueMail, queuetest.QueueX, queuetest.QueueR, queuetest.QueueW,
	queuetest.QueueC, queuetest.QueueB, queuetest.QueueP, queuetest.QueueS,
}

// TestConformanceLane runs the suite on a router over SQLite (the default)
// and the RabbitMQ lane, in the full matrix (SLUICE_TEST_FULL=1): the
// default run takes the suite through a router once, over two SQLite
// stores (queue/mux). The suite skips the tests that need what the lane
// lacks (it asks what every routed backend has).
func TestConformanceLane(t *testing.T) {
	testutil.NeedFull(t, "the router over SQLite and the RabbitMQ lane")
	amqptest.URL(t, "the tests on the RabbitMQ lane")
	queuetest.Run(t, func(t *testing.T, clk clock.Clock) backend.Backend {
		return routertest.NewMux(t, routertest.OpenSQLite(t, clk, sqlitequeue.Options{}), mux.Route{
			Name: "rabbitmq", Backend: routertest.OpenLane(t, clk, laneQueues), Queues: laneQueues,
		})
	})
}
