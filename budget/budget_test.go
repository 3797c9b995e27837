package budget_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/ratelimit"
)

// openai is the budget of the package documentation: 500 requests and
// 200k tokens a minute, 50 in flight, and 60 requests a minute per tenant.
var openai = budget.Config{
	Limits: budget.Limits{
		Requests: budget.PerMinute(500),
		Units:    map[string]budget.Rate{"tokens": budget.PerMinute(200_000)},
		InFlight: 50,
	},
	PerTenant: budget.Limits{Requests: budget.PerMinute(60)},
}

func claim(tenant string, costs map[string]budget.Cost) budget.Claim {
	return budget.Claim{Tenant: tenant, Costs: costs}
}

func TestSettleChargesAndRefunds(t *testing.T) {
	forEachStore(t, func(t *testing.T, e env) {
		b := e.budgets(t, map[string]budget.Config{"openai": openai})
		c := claim("acme", map[string]budget.Cost{"openai": {"tokens": 1000}})
		tk := mustAdmit(t, b, c)
		if got := tk.Costs["openai"]; got["requests"] != 1 || got["tokens"] != 1000 {
			t.Errorf("ticket costs = %v, want 1 request and 1000 tokens", got)
		}
		if n := used(t, b, "openai", "", budget.ScopeTotal, "tokens"); n != 1000 {
			t.Errorf("tokens used after admission = %d, want 1000", n)
		}
		s := settle(t, b, tk, map[string]budget.Cost{"openai": {"tokens": 3000}})
		if s.Charged["openai"]["tokens"] != 2000 || s.Released != 1 {
			t.Errorf("settlement at 3000 = %+v, want 2000 charged and one lease released", s)
		}
		if n := used(t, b, "openai", "", budget.ScopeTotal, "tokens"); n != 3000 {
			t.Errorf("tokens used after settling at 3000 = %d, want 3000", n)
		}
		tk = mustAdmit(t, b, c)
		s = settle(t, b, tk, map[string]budget.Cost{"openai": {"tokens": 200}})
		if s.Refunded["openai"]["tokens"] != 800 {
			t.Errorf("settlement at 200 = %+v, want 800 refunded", s)
		}
		if n := used(t, b, "openai", "", budget.ScopeTotal, "tokens"); n != 3200 {
			t.Errorf("tokens used after settling 200 = %d, want 3200", n)
		}
		if n := used(t, b, "openai", "acme", budget.ScopeTenant, "requests"); n != 2 {
			t.Errorf("tenant requests used = %d, want 2 (requests settled at their estimate)", n)
		}
		if n := used(t, b, "openai", "", budget.ScopeTotal, budget.LimitInFlight); n != 0 {
			t.Errorf("in flight after both settled = %d, want 0", n)
		}
	})
}

// TestOverdraftHoldsUntilRepaid: a settlement beyond the budget's room is
// charged in full; the debt holds every claim on the budget, even ones not
// spending the unit in debt, until it drains at the budget's rate.
func TestOverdraftHoldsUntilRepaid(t *testing.T) {
	forEachStore(t, func(t *testing.T, e env) {
		cfg := budget.Config{Limits: budget.Limits{Requests: budget.PerMinute(100), Units: map[string]budget.Rate{"tokens": budget.PerMinute(6000)}}}
		b := e.budgets(t, map[string]budget.Config{"llm": cfg})
		tk := mustAdmit(t, b, claim("", map[string]budget.Cost{"llm": {"tokens": 1000}}))
		s := settle(t, b, tk, map[string]budget.Cost{"llm": {"tokens": 9000}})
		if s.Debt["llm"]["tokens"] != 3000 {
			t.Errorf("debt after settling 9000 of 6000 = %v, want 3000 tokens", s.Debt)
		}
		h := mustHold(t, b, claim("", map[string]budget.Cost{"llm": {"requests": 1}}))
		// 3000 tokens over at 100 per second: 30s until the bucket is full again.
		if h.Budget != "llm" || h.Limit != "tokens" || h.Scope != budget.ScopeTotal || h.RetryAfter != 30*time.Second {
			t.Errorf("hold = %+v, want llm tokens (total) for 30s", h)
		}
		if !h.Until.Equal(epoch.Add(30 * time.Second)) {
			t.Errorf("hold until %v, want %v", h.Until, epoch.Add(30*time.Second))
		}
		e.clk.Advance(30 * time.Second)
		mustHold(t, b, claim("", map[string]budget.Cost{"llm": {"tokens": 1}})) // repaid, but the bucket is full
		e.clk.Advance(10 * time.Second)
		mustAdmit(t, b, claim("", map[string]budget.Cost{"llm": {"tokens": 1000}}))
	})
}

// TestAllOrNothing: a claim on two budgets, one without room, moves
// neither; the hold names the budget, limit and time.
func TestAllOrNothing(t *testing.T) {
	forEachStore(t, func(t *testing.T, e env) {
		b := e.budgets(t, map[string]budget.Config{
			"search": {Limits: budget.Limits{Requests: budget.PerSecond(10)}},
			"llm":    {Limits: budget.Limits{Units: map[string]budget.Rate{"tokens": budget.PerMinute(1000)}}},
		})
		mustAdmit(t, b, claim("", map[string]budget.Cost{"llm": {"tokens": 900}}))
		h := mustHold(t, b, claim("", map[string]budget.Cost{"search": {}, "llm": {"tokens": 200}}))
		if h.Budget != "llm" || h.Limit != "tokens" || h.RetryAfter != 6*time.Second {
			t.Errorf("hold = %+v (%s), want llm tokens for 6s", h, h)
		}
		if n := used(t, b, "search", "", budget.ScopeTotal, "requests"); n != 0 {
			t.Errorf("search requests used after a held claim = %d, want 0", n)
		}
		e.clk.Advance(6 * time.Second)
		mustAdmit(t, b, claim("", map[string]budget.Cost{"search": {}, "llm": {"tokens": 200}}))
		if n := used(t, b, "search", "", budget.ScopeTotal, "requests"); n != 1 {
			t.Errorf("search requests used = %d, want 1", n)
		}
	})
}

func TestInFlightAndTenantLimits(t *testing.T) {
	forEachStore(t, func(t *testing.T, e env) {
		cfg := budget.Config{Limits: budget.Limits{InFlight: 2}, PerTenant: budget.Limits{Requests: budget.PerMinute(2)}}
		b := e.budgets(t, map[string]budget.Config{"api": cfg})
		other := e.budgetsOn(t, e.second, map[string]budget.Config{"api": cfg}) // another process
		c := claim("a", map[string]budget.Cost{"api": {}})
		first := mustAdmit(t, b, c)
		mustAdmit(t, other, claim("b", map[string]budget.Cost{"api": {}}))
		h := mustHold(t, other, c)
		if h.Limit != budget.LimitInFlight || h.Scope != budget.ScopeTotal || h.RetryAfter != budget.DefaultLeaseTTL {
			t.Errorf("hold = %+v, want in-flight (total) until the lease TTL", h)
		}
		settle(t, other, first, nil)          // settled elsewhere: the ticket is plain data
		settle(t, b, mustAdmit(t, b, c), nil) // a's second request this minute
		h = mustHold(t, b, c)
		if h.Limit != budget.Requests || h.Scope != budget.ScopeTenant || h.RetryAfter != 30*time.Second {
			t.Errorf("hold = %+v, want requests (tenant) for 30s", h)
		}
	})
}

// TestCloseAndLearn: after one 429 with Retry-After: 2, no claim on the
// budget is admitted anywhere for 2s, and one is at once after.
func TestCloseAndLearn(t *testing.T) {
	forEachStore(t, func(t *testing.T, e env) {
		cfg := budget.Config{Limits: budget.Limits{Requests: budget.PerSecond(100)}}
		b := e.budgets(t, map[string]budget.Config{"up": cfg, "other": cfg})
		other := e.budgetsOn(t, e.second, map[string]budget.Config{"up": cfg, "other": cfg})
		resp := response(429, "Retry-After", "2")
		until, err := b.Learn(context.Background(), "up", budget.FromResponse(resp, e.clk.Now()))
		if err != nil || !until.Equal(epoch.Add(2*time.Second)) {
			t.Fatalf("Learn = %v, %v; want closed until +2s", until, err)
		}
		h := mustHold(t, other, claim("t", map[string]budget.Cost{"up": {}}))
		if h.Limit != budget.LimitClosed || h.RetryAfter != 2*time.Second || !strings.Contains(h.String(), "closed for 2s") {
			t.Errorf("hold = %+v (%s), want closed for 2s", h, h)
		}
		mustAdmit(t, other, claim("t", map[string]budget.Cost{"other": {}}))
		// A shorter close does not shorten it.
		if _, err := b.Close(context.Background(), "up", e.clk.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(2*time.Second - time.Millisecond)
		mustHold(t, b, claim("t", map[string]budget.Cost{"up": {}}))
		e.clk.Advance(time.Millisecond)
		mustAdmit(t, other, claim("t", map[string]budget.Cost{"up": {}}))
		if n := used(t, b, "up", "", budget.ScopeTotal, "requests"); n != 1 {
			t.Errorf("requests used = %d, want 1 (held claims count nothing)", n)
		}
	})
}

// TestFloor: tenant A saturates the shared part of the budget; tenant B,
// under its floor, is still admitted from the reserve, until its floor is
// spent.
func TestFloor(t *testing.T) {
	forEachStore(t, func(t *testing.T, e env) {
		cfg := budget.Config{
			Limits: budget.Limits{Requests: budget.PerSecond(10)},
			Share:  budget.Share{Floor: 0.2, Ceiling: 0.8},
		}
		b := e.budgets(t, map[string]budget.Config{"api": cfg})
		a := claim("a", map[string]budget.Cost{"api": {}})
		for range 2 { // a's floor: 2 of 10
			tk := mustAdmit(t, b, a)
			if len(tk.Floors) != 1 {
				t.Errorf("a's claim within its floor: Floors = %v, want [api]", tk.Floors)
			}
		}
		n := 2
		for admit(t, b, a).Admitted {
			n++
		}
		// The shared part is 10 less a reserve of 2: a gets 8, its ceiling.
		if n != 8 {
			t.Errorf("tenant a got %d of 10, want 8 (the shared part)", n)
		}
		bc := claim("b", map[string]budget.Cost{"api": {}})
		for i := range 2 {
			if tk := mustAdmit(t, b, bc); len(tk.Floors) != 1 {
				t.Errorf("b's claim %d: not counted on its floor", i)
			}
		}
		h := mustHold(t, b, bc)
		if h.Budget != "api" || h.Limit != "requests" {
			t.Errorf("b past its floor: hold %+v, want api requests", h)
		}
		// Refill: one request per 100ms. Under contention the refill goes
		// to whoever is under its floor first: a is not (its floor bucket
		// refills at 2/s), so b, whose floor refills too, takes it.
		e.clk.Advance(500 * time.Millisecond) // 5 back in the total, 1 in each floor
		if tk := mustAdmit(t, b, bc); len(tk.Floors) != 1 {
			t.Errorf("b after a refill: not from its floor")
		}
	})
}

func TestCeiling(t *testing.T) {
	forEachStore(t, func(t *testing.T, e env) {
		cfg := budget.Config{Limits: budget.Limits{Requests: budget.PerSecond(10), InFlight: 4}, Share: budget.Share{Ceiling: 0.5}}
		b := e.budgets(t, map[string]budget.Config{"api": cfg})
		c := claim("a", map[string]budget.Cost{"api": {}})
		mustAdmit(t, b, c)
		mustAdmit(t, b, c)
		h := mustHold(t, b, c)
		if h.Limit != budget.LimitInFlight || h.Scope != budget.ScopeCeiling {
			t.Errorf("hold = %+v, want in-flight (ceiling): half of 4", h)
		}
		mustAdmit(t, b, claim("b", map[string]budget.Cost{"api": {}}))
	})
}

func TestStatus(t *testing.T) {
	forEachStore(t, func(t *testing.T, e env) {
		b := e.budgets(t, map[string]budget.Config{"openai": openai})
		for range 3 {
			mustAdmit(t, b, claim("acme", map[string]budget.Cost{"openai": {"tokens": 50_000}}))
		}
		st, err := b.Status(context.Background(), "openai", "acme")
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]budget.LimitStatus{
			"total/requests":  {Scope: "total", Limit: "requests", Capacity: 500, Used: 3, Room: 497},
			"total/tokens":    {Scope: "total", Limit: "tokens", Capacity: 200_000, Used: 150_000, Room: 50_000},
			"tenant/requests": {Scope: "tenant", Limit: "requests", Capacity: 60, Used: 3, Room: 57},
			"total/in-flight": {Scope: "total", Limit: "in-flight", Capacity: 50, Used: 3, Room: 47},
		}
		if len(st.Limits) != len(want) {
			t.Fatalf("Status has %d limits, want %d: %+v", len(st.Limits), len(want), st.Limits)
		}
		for _, l := range st.Limits {
			if w := want[l.Scope+"/"+l.Limit]; l != w {
				t.Errorf("status %s/%s = %+v, want %+v", l.Scope, l.Limit, l, w)
			}
		}
		mustAdmit(t, b, claim("acme", map[string]budget.Cost{"openai": {"tokens": 50_000}}))
		st, _ = b.Status(context.Background(), "openai", "")
		for _, l := range st.Limits {
			if l.Limit == "tokens" && (l.Room != 0 || l.NextRoom != 300*time.Microsecond) {
				t.Errorf("tokens with no room: %+v, want NextRoom 300µs (one token at 200k/min)", l)
			}
		}
	})
}

func TestErrors(t *testing.T) {
	forEachStore(t, func(t *testing.T, e env) {
		b := e.budgets(t, map[string]budget.Config{"openai": openai})
		ctx := context.Background()
		if _, err := b.Admit(ctx, claim("", map[string]budget.Cost{"nope": {}})); !errors.Is(err, budget.ErrUnknownBudget) {
			t.Errorf("Admit on an unknown budget: %v, want ErrUnknownBudget", err)
		}
		if _, err := b.Admit(ctx, claim("", map[string]budget.Cost{"openai": {"tokens": -1}})); !errors.Is(err, budget.ErrInvalidConfig) {
			t.Errorf("Admit with a negative cost: %v, want ErrInvalidConfig", err)
		}
		if _, err := b.Admit(ctx, claim("", nil)); !errors.Is(err, budget.ErrInvalidConfig) {
			t.Errorf("Admit with no budget: %v, want ErrInvalidConfig", err)
		}
		if _, err := b.Admit(ctx, claim("", map[string]budget.Cost{"openai": {"tokens": 300_000}})); !errors.Is(err, ratelimit.ErrCostExceedsQuota) {
			t.Errorf("Admit above the capacity: %v, want ErrCostExceedsQuota", err)
		}
		if _, err := b.Close(ctx, "nope", e.clk.Now()); !errors.Is(err, budget.ErrUnknownBudget) {
			t.Errorf("Close on an unknown budget: %v, want ErrUnknownBudget", err)
		}
	})
}

// TestSettleTenantCounters: a settlement moves every counter the claim
// was charged on: the total, the tenant's own, its ceiling and, when the
// claim was under it, its floor.
func TestSettleTenantCounters(t *testing.T) {
	forEachStore(t, func(t *testing.T, e env) {
		cfg := budget.Config{
			Limits:    budget.Limits{Units: map[string]budget.Rate{"tokens": budget.PerMinute(10_000)}},
			PerTenant: budget.Limits{Units: map[string]budget.Rate{"tokens": budget.PerMinute(5_000)}},
			Share:     budget.Share{Floor: 0.2, Ceiling: 0.5},
		}
		b := e.budgets(t, map[string]budget.Config{"llm": cfg})
		tk := mustAdmit(t, b, claim("acme", map[string]budget.Cost{"llm": {"tokens": 1000}}))
		if len(tk.Floors) != 1 {
			t.Fatalf("claim within the floor: Floors = %v, want [llm]", tk.Floors)
		}
		settle(t, b, tk, map[string]budget.Cost{"llm": {"tokens": 1500}})
		for _, scope := range []string{budget.ScopeTotal, budget.ScopeTenant, budget.ScopeCeiling, budget.ScopeFloor} {
			if n := used(t, b, "llm", "acme", scope, "tokens"); n != 1500 {
				t.Errorf("%s tokens used after settling 1500 = %d, want 1500", scope, n)
			}
		}
		tk = mustAdmit(t, b, claim("acme", map[string]budget.Cost{"llm": {"tokens": 1000}})) // past the floor: shared
		if len(tk.Floors) != 0 {
			t.Fatalf("claim past the floor: Floors = %v, want none", tk.Floors)
		}
		settle(t, b, tk, map[string]budget.Cost{"llm": {"tokens": 0}})
		if n := used(t, b, "llm", "acme", budget.ScopeTotal, "tokens"); n != 1500 {
			t.Errorf("total tokens after refunding the second claim = %d, want 1500", n)
		}
		if n := used(t, b, "llm", "acme", budget.ScopeFloor, "tokens"); n != 1500 {
			t.Errorf("floor tokens after a claim not charged on it = %d, want 1500 (untouched)", n)
		}
	})
}
