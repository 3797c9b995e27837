package amqpqueue

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/queuetest"
)

// TestConformance runs the suite on the lane; the tests that need a
// capability the lane lacks skip themselves (queuetest's Need).
func TestConformance(t *testing.T) {
	brokerURL(t)
	queuetest.Run(t, func(t *testing.T, clk clock.Clock) queue.Backend {
		// Lease is called directly by most tests: give deliveries time
		// to arrive from the broker.
		return open(t, Options{Clock: clk, LeaseWait: 300 * time.Millisecond})
	})
}
