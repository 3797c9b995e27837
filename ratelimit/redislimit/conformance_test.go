package redislimit_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/ratelimit/limittest"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
)

// TestConformance runs the shared suite on miniredis, and on real Redis
// when SLUICE_REDIS_URL is set, with two batching stores on separate
// clients as two processes (the suite runs every check a single store
// runs, some of them across the two). The full matrix (SLUICE_TEST_FULL=1)
// runs it also on one store, batched and not, and on two unbatched ones.
func TestConformance(t *testing.T) {
	backends := []struct {
		name string
		open func(testing.TB) backend
	}{
		{"miniredis", miniBackend},
		{"redis", realBackend},
	}
	modes := []struct {
		name   string
		opts   redislimit.Options
		second bool
	}{
		{"two-processes", redislimit.Options{}, true},
		{"batched", redislimit.Options{}, false},
		{"unbatched", redislimit.Options{DisableBatching: true}, false},
		{"two-processes-unbatched", redislimit.Options{DisableBatching: true}, true},
	}
	for _, be := range backends {
		for i, m := range modes {
			t.Run(be.name+"/"+m.name, func(t *testing.T) {
				if i > 0 {
					testutil.NeedFull(t, "the "+m.name+" mode")
				}
				limittest.Run(t, func(t *testing.T) limittest.Harness {
					b := be.open(t)
					clk := fakeClock()
					opts := m.opts
					opts.Clock = clk
					h := limittest.Harness{Store: b.store(t, opts), Advance: clk.Advance}
					if m.second {
						h.Second = b.store(t, opts)
					}
					return h
				})
			})
		}
	}
}
