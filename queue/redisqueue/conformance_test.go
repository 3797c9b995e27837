package redisqueue_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// TestConformance runs the shared suite on miniredis, and on real Redis
// when SLUICE_REDIS_URL is set, with calls batched into pipelines and one
// by one.
func TestConformance(t *testing.T) {
	modes := []struct {
		name string
		opts redisqueue.Options
	}{
		{"batched", redisqueue.Options{}},
		{"unbatched", redisqueue.Options{DisableBatching: true}},
	}
	for _, srv := range servers {
		for _, m := range modes {
			t.Run(srv.name+"/"+m.name, func(t *testing.T) {
				queuetest.Run(t, func(t *testing.T, clk clock.Clock) queue.Backend {
					opts := m.opts
					opts.Clock = clk
					return srv.open(t).backend(t, opts)
				})
			})
		}
	}
}
