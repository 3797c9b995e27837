package pgqueue_test

import (
	"testing"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/pgqueue"
	"github.com/sluicehq/sluice/queue/queuetest"
)

func TestWatch(t *testing.T) {
	queuetest.RunWatch(t, func(t *testing.T, clk clock.Clock) backend.Backend {
		return openWith(t, clk, pgqueue.Options{Events: true})
	})
}
