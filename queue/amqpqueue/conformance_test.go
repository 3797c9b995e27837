package amqpqueue

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetest"
)

// TestConformance runs the suite on the lane in both queue modes; the
// suite skips the tests that need a capability the lane lacks.
func TestConformance(t *testing.T) {
	brokerURL(t)
	// The priority run also consumes each queue on two channels.
	modes := []struct {
		name                  string
		priorities, consumers int
	}{{"Quorum", 0, 1}, {"Priority", 3, 2}}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			queuetest.Run(t, func(t *testing.T, clk clock.Clock) backend.Backend {
				return open(t, Options{Clock: clk, Priorities: m.priorities, Consumers: m.consumers, LeaseWait: 300 * time.Millisecond})
			})
		})
	}
}
