package bench

// Call-budget benchmarks: flow.Budget against golang.org/x/time/rate, and
// flow.Map's per-item overhead against errgroup with SetLimit and
// sourcegraph/conc's iter.Mapper. Run them with
//
//	go test -run '^$' -bench 'Budget|Map' -benchtime 200ms -count 5 .

import (
	"context"
	"testing"
	"time"

	"github.com/sourcegraph/conc/iter"
	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"

	"github.com/sluicehq/sluice/flow"
)

// plenty is a budget large enough that no benchmark call ever waits: these
// benchmarks measure the bookkeeping, not the rate.
const plenty = 1 << 30

func BenchmarkBudgetWait(b *testing.B) {
	ctx := context.Background()
	b.Run("impl=sluice", func(b *testing.B) {
		budget, err := flow.NewBudget(plenty, time.Second)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := budget.Wait(ctx, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=x-time-rate", func(b *testing.B) {
		lim := rate.NewLimiter(rate.Limit(plenty), plenty)
		b.ReportAllocs()
		for b.Loop() {
			if err := lim.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkBudgetTryTake(b *testing.B) {
	b.Run("impl=sluice", func(b *testing.B) {
		budget, _ := flow.NewBudget(plenty, time.Second)
		b.ReportAllocs()
		for b.Loop() {
			budget.TryTake(1)
		}
	})
	b.Run("impl=x-time-rate", func(b *testing.B) {
		lim := rate.NewLimiter(rate.Limit(plenty), plenty)
		b.ReportAllocs()
		for b.Loop() {
			lim.Allow()
		}
	})
}

// mapItems is how many items each Map call runs; the per-item metric
// divides by it.
const mapItems = 1000

func mapInput() []int {
	in := make([]int, mapItems)
	for i := range in {
		in[i] = i
	}
	return in
}

func double(_ context.Context, n int) (int, error) { return 2 * n, nil }

// BenchmarkMap runs 1,000 trivial items with 10 workers per call, so the
// time is the fan-out machinery's: claiming an item, calling, storing the
// result in order, waiting.
func BenchmarkMap(b *testing.B) {
	ctx := context.Background()
	in := mapInput()
	run := func(b *testing.B, fn func() error) {
		b.ReportAllocs()
		for b.Loop() {
			if err := fn(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*mapItems), "ns/item")
	}
	b.Run("impl=sluice", func(b *testing.B) {
		run(b, func() error { _, err := flow.Map(ctx, in, double, flow.Workers(10)); return err })
	})
	pool := flow.NewPool(10)
	b.Run("impl=sluice-pool", func(b *testing.B) {
		run(b, func() error { _, err := flow.Map(ctx, in, double, flow.WithPool(pool)); return err })
	})
	b.Run("impl=errgroup-setlimit", func(b *testing.B) {
		run(b, func() error {
			out := make([]int, len(in))
			g, ctx := errgroup.WithContext(ctx)
			g.SetLimit(10)
			for i, n := range in {
				g.Go(func() error {
					v, err := double(ctx, n)
					out[i] = v
					return err
				})
			}
			return g.Wait()
		})
	})
	b.Run("impl=conc-iter", func(b *testing.B) {
		m := iter.Mapper[int, int]{MaxGoroutines: 10}
		run(b, func() error {
			_, err := m.MapErr(in, func(n *int) (int, error) { return double(ctx, *n) })
			return err
		})
	})
}
