package budget_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(redistest.HoldLogs()))
}

// epoch is where fake clocks start: a multiple of every window used.
var epoch = time.Unix(1_700_000_000, 0)

// env is one store under test with the fake clock it counts on.
type env struct {
	store ratelimit.Admitter
	clk   *clock.Fake
	// second is another store on the same state (another process), or
	// store itself for memlimit.
	second ratelimit.Admitter
	// open returns one more store on the same state.
	open func() ratelimit.Admitter
}

func (e env) budgets(t testing.TB, defs map[string]budget.Config) *budget.Budgets {
	t.Helper()
	return e.budgetsOn(t, e.store, defs)
}

func (e env) budgetsOn(t testing.TB, st ratelimit.Admitter, defs map[string]budget.Config) *budget.Budgets {
	t.Helper()
	b, err := budget.New(budget.Options{Store: st, Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Replace(defs); err != nil {
		t.Fatal(err)
	}
	return b
}

// forEachStore runs fn on memlimit, on redislimit over miniredis, and on
// redislimit over the real Redis named by SLUICE_REDIS_URL when set.
func forEachStore(t *testing.T, fn func(t *testing.T, e env)) {
	t.Run("memlimit", func(t *testing.T) {
		clk := clock.NewFake(epoch)
		s := memlimit.New(memlimit.Options{Clock: clk, SweepInterval: -1})
		t.Cleanup(func() { _ = s.Close() })
		fn(t, env{store: s, clk: clk, second: s, open: func() ratelimit.Admitter { return s }})
	})
	t.Run("miniredis", func(t *testing.T) {
		m := miniredis.RunT(t)
		fn(t, redisEnv(t, &redis.Options{Addr: m.Addr()}, ""))
	})
	t.Run("redis", func(t *testing.T) {
		opts, prefix, ok := redistest.Real(t)
		if !ok {
			t.Skip("SLUICE_REDIS_URL not set: skipping the real-Redis run")
		}
		fn(t, redisEnv(t, opts, prefix))
	})
}

func redisEnv(t testing.TB, opts *redis.Options, prefix keyspace.Prefix) env {
	t.Helper()
	clk := clock.NewFake(epoch)
	open := func() *redislimit.Store {
		c := redis.NewClient(opts)
		t.Cleanup(func() { _ = c.Close() })
		s, err := redislimit.New(c, redislimit.Options{Clock: clk, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	return env{store: open(), second: open(), clk: clk, open: func() ratelimit.Admitter { return open() }}
}

func admit(t testing.TB, b *budget.Budgets, c budget.Claim) budget.Admission {
	t.Helper()
	a, err := b.Admit(context.Background(), c)
	if err != nil {
		t.Fatalf("Admit(%+v): %v", c, err)
	}
	return a
}

func mustAdmit(t testing.TB, b *budget.Budgets, c budget.Claim) budget.Ticket {
	t.Helper()
	a := admit(t, b, c)
	if !a.Admitted {
		t.Fatalf("Admit(%+v): held by %v, want admitted", c, a.Hold)
	}
	return a.Ticket
}

func mustHold(t testing.TB, b *budget.Budgets, c budget.Claim) budget.Hold {
	t.Helper()
	a := admit(t, b, c)
	if a.Admitted {
		t.Fatalf("Admit(%+v): admitted, want held", c)
	}
	return a.Hold
}

func settle(t testing.TB, b *budget.Budgets, tk budget.Ticket, actual map[string]budget.Cost) budget.Settlement {
	t.Helper()
	s, err := b.Settle(context.Background(), tk, actual)
	if err != nil {
		t.Fatalf("Settle: %v", err)
	}
	return s
}

// used returns the Used of the total limit of unit on budget name.
func used(t testing.TB, b *budget.Budgets, name, tenant, scope, unit string) int64 {
	t.Helper()
	st, err := b.Status(context.Background(), name, tenant)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range st.Limits {
		if l.Scope == scope && l.Limit == unit {
			return l.Used
		}
	}
	t.Fatalf("Status(%s, %q) has no %s %s limit: %+v", name, tenant, scope, unit, st.Limits)
	return 0
}
