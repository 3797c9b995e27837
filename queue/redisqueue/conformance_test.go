package redisqueue_test

import (
	"testing"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// TestConformance runs the shared suite on miniredis, and on real Redis
// when SLUICE_REDIS_URL is set, with calls batched into pipelines; the
// full matrix (SLUICE_TEST_FULL=1) runs it also with calls one by one and
// on a Redis Cluster client (miniredis as a one-node cluster). Calls one
// by one run the full scripts only: the other modes take the lean path
// for jobs that need no scheduler (lean.go).
func TestConformance(t *testing.T) {
	modes := []struct {
		name          string
		opts          redisqueue.Options
		cluster, full bool
	}{
		{"batched", redisqueue.Options{}, false, false},
		{"unbatched", redisqueue.Options{DisableBatching: true}, false, true},
		{"cluster", redisqueue.Options{}, true, false},
	}
	for _, srv := range servers {
		for i, m := range modes {
			t.Run(srv.name+"/"+m.name, func(t *testing.T) {
				if i > 0 {
					testutil.NeedFull(t, "the "+m.name+" mode")
				}
				queuetest.Run(t, func(t *testing.T, clk clock.Clock) backend.Backend {
					opts := m.opts
					opts.Clock = clk
					s := srv.open(t)
					var be *redisqueue.Backend
					if m.cluster {
						be = s.backendOn(t, s.clusterClient(t), opts)
					} else {
						be = s.backend(t, opts)
					}
					if m.full {
						redisqueue.DisableLean(be)
					}
					return be
				})
			})
		}
	}
}
