package memlimit_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/ratelimit/limittest"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start is a fixed, deliberately unaligned instant: the suite finds the
// window boundaries itself.
var start = time.Unix(1_700_000_000, 123_456_789)

func TestConformance(t *testing.T) {
	t.Parallel()
	limittest.Run(t, func(t *testing.T) limittest.Harness {
		clk := clock.NewFake(start)
		s := memlimit.New(memlimit.Options{Clock: clk})
		t.Cleanup(func() { s.Close() })
		return limittest.Harness{Store: s, Advance: clk.Advance}
	})
}

// TestConformanceOneShard runs the suite with every counter behind one
// lock, so that multi-request decisions take the same shard more than once.
func TestConformanceOneShard(t *testing.T) {
	t.Parallel()
	limittest.Run(t, func(t *testing.T) limittest.Harness {
		clk := clock.NewFake(start)
		s := memlimit.New(memlimit.Options{Clock: clk, Shards: 1, SweepInterval: -1})
		t.Cleanup(func() { s.Close() })
		return limittest.Harness{Store: s, Advance: clk.Advance}
	})
}
