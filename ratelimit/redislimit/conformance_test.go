package redislimit_test

import (
	"testing"

	"github.com/sluicehq/sluice/ratelimit/limittest"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
)

// TestConformance runs the shared suite on miniredis, and on real Redis
// when SLUICE_REDIS_URL is set: with and without batching, and with two
// stores on separate clients as two processes.
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
		{"batched", redislimit.Options{}, false},
		{"unbatched", redislimit.Options{DisableBatching: true}, false},
		{"two-processes", redislimit.Options{}, true},
		{"two-processes-unbatched", redislimit.Options{DisableBatching: true}, true},
	}
	for _, be := range backends {
		for _, m := range modes {
			t.Run(be.name+"/"+m.name, func(t *testing.T) {
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
