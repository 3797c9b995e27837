package redisqueue_test

import (
	"testing"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// TestConformance runs the shared suite on miniredis, and on real Redis
// when SLUICE_REDIS_URL is set, with calls batched into pipelines and one
// by one, and on a Redis Cluster client (miniredis as a one-node cluster).
func TestConformance(t *testing.T) {
	modes := []struct {
		name    string
		opts    redisqueue.Options
		cluster bool
	}{
		{"batched", redisqueue.Options{}, false},
		{"unbatched", redisqueue.Options{DisableBatching: true}, false},
		{"cluster", redisqueue.Options{}, true},
	}
	for _, srv := range servers {
		for _, m := range modes {
			t.Run(srv.name+"/"+m.name, func(t *testing.T) {
				queuetest.Run(t, func(t *testing.T, clk clock.Clock) queue.Backend {
					opts := m.opts
					opts.Clock = clk
					s := srv.open(t)
					if m.cluster {
						return s.backendOn(t, s.clusterClient(t), opts)
					}
					return s.backend(t, opts)
				})
			})
		}
	}
}
