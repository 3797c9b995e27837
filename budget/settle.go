package budget

import (
	"context"
	"errors"
	"slices"
	"sort"

	"github.com/sluicehq/sluice/ratelimit"
)

// Settlement is what Settle did.
type Settlement struct {
	// Charged is what was charged beyond the estimate, by budget and unit.
	Charged map[string]Cost
	// Refunded is what was given back below the estimate, by budget and
	// unit.
	Refunded map[string]Cost
	// Debt is, by budget and unit, how far a total is now beyond its
	// capacity: the overdraft carried forward, which holds the budget until
	// it has drained at the budget's rate. Only units in debt appear.
	Debt map[string]Cost
	// Released is how many of the ticket's in-flight leases were still
	// held and are now given back.
	Released int
}

// Settle ends an admitted claim with its actual usage, by budget and unit:
// what it used beyond the estimate is charged (even past the limit: an
// overdraft, carried forward as debt that holds the budget until repaid),
// what it did not use is refunded (as far as the counters still hold it),
// and its in-flight leases are released. A unit missing from actual is
// settled at its estimate; a budget missing from actual is settled at its
// estimate entirely. actual may be nil: the estimate stands and only the
// leases are released.
//
// Settle charges, refunds and releases in up to three store operations,
// each atomic; on an error it still tries the rest and returns the first
// error. A budget removed since the admission is skipped. Settling a
// ticket twice releases nothing the second time but charges or refunds
// the difference again: settle once.
func (b *Budgets) Settle(ctx context.Context, t Ticket, actual map[string]Cost) (Settlement, error) {
	names := make([]string, 0, len(t.Costs))
	for n := range t.Costs {
		names = append(names, n)
	}
	sort.Strings(names)
	s := Settlement{Charged: map[string]Cost{}, Refunded: map[string]Cost{}, Debt: map[string]Cost{}}
	var charge, refund []ratelimit.Request
	var chargeLabels []label
	for _, name := range names {
		cfgs, err := b.lookupEffective([]string{name})
		if err != nil {
			continue // removed: nothing to settle against
		}
		cfg, est, used := cfgs[0], t.Costs[name], actual[name]
		if used == nil {
			continue
		}
		for _, unit := range units(est, used) {
			n, ok := used[unit]
			if !ok {
				continue
			}
			diff := n - est[unit]
			if diff == 0 {
				continue
			}
			reqs, labels := settleParts(name, t, cfg, unit, abs(diff))
			if diff > 0 {
				add(s.Charged, name, unit, diff)
				charge, chargeLabels = append(charge, reqs...), append(chargeLabels, labels...)
			} else {
				add(s.Refunded, name, unit, -diff)
				refund = append(refund, reqs...)
			}
		}
	}
	var errs []error
	if len(charge) > 0 {
		d, err := b.store.Charge(ctx, charge...)
		errs = append(errs, err)
		for i, r := range d.Results {
			if l := chargeLabels[i]; l.scope == ScopeTotal && r.Used > r.Limit.Capacity() {
				add(s.Debt, l.budget, l.unit, r.Used-r.Limit.Capacity())
			}
		}
	}
	if len(refund) > 0 {
		clampRefund(refund)
		errs = append(errs, b.store.Refund(ctx, refund...))
	}
	for _, l := range t.Leases {
		ok, err := b.store.Release(ctx, l)
		errs = append(errs, err)
		if ok {
			s.Released++
		}
	}
	for _, err := range errs {
		if err != nil {
			return s, errors.Join(errs...)
		}
	}
	return s, nil
}

// settleParts lists the counters a unit of the ticket was charged on,
// each at cost n (at most its capacity for a refund: a counter cannot give
// back more than it holds).
func settleParts(name string, t Ticket, cfg Config, unit string, n int64) ([]ratelimit.Request, []label) {
	var ps parts
	if r, ok := rateOf(cfg.Limits, unit); ok {
		ps.add(name, ScopeTotal, t.Tenant, unit, r, n)
		if t.Tenant != "" && cfg.Share.Ceiling > 0 {
			ps.add(name, ScopeCeiling, t.Tenant, unit, r.scaled(cfg.Share.Ceiling), n)
		}
		if t.Tenant != "" && cfg.Share.Floor > 0 && slices.Contains(t.Floors, name) {
			ps.add(name, ScopeFloor, t.Tenant, unit, r.scaled(cfg.Share.Floor), n)
		}
	}
	if r, ok := rateOf(cfg.PerTenant, unit); ok && t.Tenant != "" {
		ps.add(name, ScopeTenant, t.Tenant, unit, r, n)
	}
	return ps.reqs, ps.labels
}

// clampRefund limits each refund to its counter's capacity, which is all
// a refund can be validated against.
func clampRefund(reqs []ratelimit.Request) {
	for i := range reqs {
		reqs[i].Cost = min(reqs[i].Cost, reqs[i].Limit.Capacity())
	}
}

func rateOf(l Limits, unit string) (Rate, bool) {
	if unit == Requests {
		return l.Requests, !l.Requests.IsZero()
	}
	r, ok := l.Units[unit]
	return r, ok
}

func units(a, b Cost) []string {
	var out []string
	for u := range a {
		out = append(out, u)
	}
	for u := range b {
		if _, ok := a[u]; !ok {
			out = append(out, u)
		}
	}
	sort.Strings(out)
	return out
}

func add(m map[string]Cost, name, unit string, n int64) {
	if m[name] == nil {
		m[name] = Cost{}
	}
	m[name][unit] += n
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
