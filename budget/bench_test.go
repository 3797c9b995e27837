package budget_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
)

// benchBudget never runs out during a benchmark: the cost measured is
// the decision's, not a hold's.
var benchBudget = budget.Config{
	Limits: budget.Limits{
		Requests: budget.Rate{Quota: 1_000_000_000, Window: time.Second},
		Units:    map[string]budget.Rate{"tokens": {Quota: 1_000_000_000, Window: time.Second}},
		InFlight: 1_000_000,
	},
	PerTenant: budget.Limits{Requests: budget.Rate{Quota: 1_000_000_000, Window: time.Second}},
	Share:     budget.Share{Ceiling: 0.5},
}

func benchStores(b *testing.B, fn func(b *testing.B, st ratelimit.Admitter)) {
	b.Run("memlimit", func(b *testing.B) {
		s := memlimit.New(memlimit.Options{SweepInterval: -1})
		defer s.Close()
		fn(b, s)
	})
	b.Run("redislimit", func(b *testing.B) {
		opts, prefix, ok := redistest.Real(b)
		if !ok { // miniredis: measures the client side and the script, not a server
			m := miniredis.RunT(b)
			opts = &redis.Options{Addr: m.Addr()}
		}
		c := redis.NewClient(opts)
		defer c.Close()
		s, err := redislimit.New(c, redislimit.Options{Prefix: prefix})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		fn(b, s)
	})
}

// BenchmarkAdmit measures Admit alone: a claim on one budget with
// requests, tokens, a tenant limit and a ceiling (four counters) and the
// budget's gate, in one store operation.
func BenchmarkAdmit(b *testing.B) {
	benchStores(b, func(b *testing.B, st ratelimit.Admitter) {
		cfg := benchBudget
		cfg.Limits.InFlight = 0 // leases would pile up without settling
		bs, err := budget.New(budget.Options{Store: st})
		if err != nil {
			b.Fatal(err)
		}
		if err := bs.Define("openai", cfg); err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		c := budget.Claim{Tenant: "acme", Costs: map[string]budget.Cost{"openai": {"tokens": 1}}}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if a, err := bs.Admit(ctx, c); err != nil || !a.Admitted {
					b.Fatalf("Admit: %v, %+v", err, a.Hold)
				}
			}
		})
	})
}

// BenchmarkAdmitSettle measures Admit then Settle at the estimate: a claim on
// one budget with requests, tokens, the in-flight maximum, a tenant limit
// and a ceiling (five counters and two leases in one store operation),
// and the release of its leases.
func BenchmarkAdmitSettle(b *testing.B) {
	benchStores(b, func(b *testing.B, st ratelimit.Admitter) {
		bs, err := budget.New(budget.Options{Store: st})
		if err != nil {
			b.Fatal(err)
		}
		if err := bs.Define("openai", benchBudget); err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		c := budget.Claim{Tenant: "acme", Costs: map[string]budget.Cost{"openai": {"tokens": 1200}}}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				a, err := bs.Admit(ctx, c)
				if err != nil || !a.Admitted {
					b.Fatalf("Admit: %v, %+v", err, a.Hold)
				}
				if _, err := bs.Settle(ctx, a.Ticket, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}
