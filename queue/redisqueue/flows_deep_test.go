package redisqueue_test

import (
	"testing"

	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// TestFlowDeepChain: a chain of 1,500 jobs is cancelled in the one script
// that cancels its root and put back by the one retry of that root. The
// settling goes generation by generation, not nested, so it fits the Lua
// stack of miniredis's Lua too, which stops a few hundred calls deep.
func TestFlowDeepChain(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			queuetest.DeepChain(t, srv.open(t).backend(t, redisqueue.Options{}), 1500)
		})
	}
}
