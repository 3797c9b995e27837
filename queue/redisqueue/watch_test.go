package redisqueue_test

import (
	"testing"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// TestWatchConformance runs the progress, event log, wait and subscribe
// suite with the event log on, with and without the outbox (the log's
// arguments sit before the outbox's in every script).
func TestWatchConformance(t *testing.T) {
	for _, srv := range servers {
		for _, m := range []struct {
			name string
			opts redisqueue.Options
		}{
			{"log", redisqueue.Options{Events: true}},
			{"log+outbox", redisqueue.Options{Events: true, Outbox: true}},
			{"unbatched", redisqueue.Options{Events: true, DisableBatching: true}},
		} {
			t.Run(srv.name+"/"+m.name, func(t *testing.T) {
				queuetest.RunWatch(t, func(t *testing.T, clk clock.Clock) backend.Backend {
					opts := m.opts
					opts.Clock = clk
					return srv.open(t).backend(t, opts)
				})
			})
		}
	}
}
