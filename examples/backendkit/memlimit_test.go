package backendkit_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/ratelimit/limittest"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

// TestLimitConformance runs the suite every ratelimit.Store must pass from
// outside the Sluice module, on the in-process store driven by a fake clock
// from the public clock package.
func TestLimitConformance(t *testing.T) {
	limittest.Run(t, func(t *testing.T) limittest.Harness {
		clk := clock.NewFake(time.Unix(1_700_000_000, 0))
		s := memlimit.New(memlimit.Options{Clock: clk})
		t.Cleanup(func() { s.Close() })
		return limittest.Harness{Store: s, Advance: clk.Advance}
	})
}
