package budget

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// Status is a budget's state now: for metrics, the API and "why is my
// work waiting?".
type Status struct {
	// Budget is the budget's name.
	Budget string `json:"budget"`
	// Tenant is the tenant whose own limits are included; empty for the
	// totals alone.
	Tenant string `json:"tenant,omitempty"`
	// ClosedFor is how long the budget stays closed (0 when open).
	ClosedFor time.Duration `json:"closed_for"`
	// Factor is the fraction of the configured total rates in effect in
	// this process: below 1 while an adaptive budget is slowed down.
	Factor float64 `json:"factor"`
	// Limits has one entry per limit: the totals first, then the tenant's.
	Limits []LimitStatus `json:"limits"`
}

// LimitStatus is one limit's state.
type LimitStatus struct {
	// Scope is ScopeTotal, ScopeTenant, ScopeCeiling or ScopeFloor.
	Scope string `json:"scope"`
	// Limit is a unit name or LimitInFlight.
	Limit string `json:"limit"`
	// Capacity is the most the limit holds at once (the rate's burst, or
	// the in-flight maximum).
	Capacity int64 `json:"capacity"`
	// Used is what the limit holds now; above Capacity when in debt.
	Used int64 `json:"used"`
	// Room is what could be admitted now (Capacity - Used, never
	// negative).
	Room int64 `json:"room"`
	// NextRoom is how long until one more unit fits: 0 when Room is
	// positive. For LimitInFlight it is 0: a place returns when a holder
	// settles.
	NextRoom time.Duration `json:"next_room"`
}

// Status reports the budget name's limits as they stand: the totals and,
// when tenant is not empty, the tenant's own limits, ceiling and floor. It
// reads without counting, in a few store operations (not one snapshot).
func (b *Budgets) Status(ctx context.Context, name, tenant string) (Status, error) {
	cfgs, err := b.lookupEffective([]string{name})
	if err != nil {
		return Status{}, err
	}
	cfg := cfgs[0]
	st := Status{Budget: name, Tenant: tenant, Factor: b.Factor(name)}
	if st.ClosedFor, err = b.store.ClosedFor(ctx, gateKey(name)); err != nil {
		return Status{}, err
	}
	var ps parts
	for _, ur := range cfg.Limits.rates() {
		ps.add(name, ScopeTotal, tenant, ur.unit, ur.rate, 0)
	}
	if tenant != "" {
		for _, ur := range cfg.PerTenant.rates() {
			ps.add(name, ScopeTenant, tenant, ur.unit, ur.rate, 0)
		}
		for _, ur := range cfg.Limits.rates() {
			if cfg.Share.Ceiling > 0 {
				ps.add(name, ScopeCeiling, tenant, ur.unit, ur.rate.scaled(cfg.Share.Ceiling), 0)
			}
			if cfg.Share.Floor > 0 {
				ps.add(name, ScopeFloor, tenant, ur.unit, ur.rate.scaled(cfg.Share.Floor), 0)
			}
		}
	}
	if len(ps.reqs) > 0 {
		d, err := b.store.Consume(ctx, ps.reqs...)
		if err != nil {
			return Status{}, err
		}
		for i, r := range d.Results {
			st.Limits = append(st.Limits, rateStatus(ps.labels[i], r))
		}
	}
	inflight := func(scope string, most int64) error {
		n, err := b.store.Held(ctx, leaseKey(name, scope, tenant))
		if err == nil {
			st.Limits = append(st.Limits, LimitStatus{Scope: scope, Limit: LimitInFlight, Capacity: most, Used: n, Room: max(0, most-n)})
		}
		return err
	}
	if cfg.Limits.InFlight > 0 {
		if err := inflight(ScopeTotal, cfg.Limits.InFlight); err != nil {
			return Status{}, err
		}
	}
	if tenant != "" && cfg.PerTenant.InFlight > 0 {
		if err := inflight(ScopeTenant, cfg.PerTenant.InFlight); err != nil {
			return Status{}, err
		}
	}
	return st, nil
}

func rateStatus(l label, r ratelimit.Result) LimitStatus {
	c := r.Limit.Capacity()
	ls := LimitStatus{Scope: l.scope, Limit: l.unit, Capacity: c, Used: r.Used, Room: max(0, c-r.Used)}
	if ls.Room == 0 {
		ls.NextRoom = ratelimit.ReserveDelay(r.Limit, r.ResetAfter, 1)
	}
	return ls
}
