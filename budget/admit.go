package budget

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// Cost is what a claim spends of one budget, by unit: {"requests": 1,
// "tokens": 1200}. A claim spends one request unless its Cost names
// "requests"; units the budget does not limit are not counted.
type Cost map[string]int64

// Claim asks for room on one or more budgets at once.
type Claim struct {
	// Tenant is who the claim is for: its per-tenant limits, ceiling and
	// floor apply. Empty means no tenant: only the totals apply, and the
	// claim is never under a floor.
	Tenant string
	// Costs are the estimated costs by budget name. Must name at least
	// one budget.
	Costs map[string]Cost
}

// Validate returns an error matching ErrInvalidConfig when c cannot be
// decided.
func (c Claim) Validate() error {
	if len(c.Costs) == 0 {
		return invalid("Claim.Costs", "must name at least one budget")
	}
	for name, cost := range c.Costs {
		for u, n := range cost {
			if n < 0 {
				return invalid("Claim.Costs["+name+"]["+u+"]", "must not be negative, got %d", n)
			}
		}
	}
	return nil
}

// amount is what cost spends of unit, with the default of one request.
func (c Cost) amount(unit string) int64 {
	n, ok := c[unit]
	if !ok && unit == Requests {
		return 1
	}
	return n
}

// Ticket is an admitted claim: what was charged and the in-flight leases
// held. Pass it to Settle when the work ends. It is plain data (it
// marshals to JSON), so the process that settles need not be the one that
// admitted.
type Ticket struct {
	// Tenant is the claim's tenant.
	Tenant string `json:"tenant,omitempty"`
	// Costs are the costs charged, by budget, with the default request
	// filled in.
	Costs map[string]Cost `json:"costs"`
	// Floors names the budgets on which the claim was under its tenant's
	// floor (its cost was counted on the floor bucket too).
	Floors []string `json:"floors,omitempty"`
	// Leases are the in-flight leases held until Settle.
	Leases []ratelimit.Lease `json:"leases,omitempty"`
	// Admitted is when the claim was admitted.
	Admitted time.Time `json:"admitted"`
}

// Hold says what keeps a claim from being admitted.
type Hold struct {
	// Budget is the budget that holds the claim.
	Budget string `json:"budget"`
	// Limit is what holds it: a unit name (such as "requests" or
	// "tokens"), LimitInFlight or LimitClosed.
	Limit string `json:"limit"`
	// Scope is whose limit it is: ScopeTotal, ScopeShared, ScopeTenant,
	// ScopeCeiling or ScopeFloor; empty for LimitClosed.
	Scope string `json:"scope,omitempty"`
	// RetryAfter is how long until this limit has room for the claim,
	// given no other traffic and no early release. For LimitInFlight it
	// is when the earliest lease expires: room usually returns sooner,
	// when a holder settles, so a waiter held by it should also be woken
	// by Settle.
	RetryAfter time.Duration `json:"retry_after"`
	// Until is when that is: the decision's time plus RetryAfter.
	Until time.Time `json:"until"`
}

// String describes the hold, such as "budget openai: tokens (total) full
// for 12s".
func (h Hold) String() string {
	what := h.Limit
	if h.Scope != "" {
		what += " (" + h.Scope + ")"
	}
	if h.Limit == LimitClosed {
		return fmt.Sprintf("budget %s: closed for %s", h.Budget, h.RetryAfter)
	}
	return fmt.Sprintf("budget %s: %s full for %s", h.Budget, what, h.RetryAfter)
}

// Admission is the answer to a claim.
type Admission struct {
	// Admitted is true when every limit of every named budget had room:
	// the costs are charged and the leases held (see Ticket).
	Admitted bool
	// Ticket is the admitted claim; zero when held.
	Ticket Ticket
	// Hold is what holds the claim longest when not admitted: the
	// earliest time the whole claim could be admitted is Hold.Until.
	Hold Hold
	// Holds lists every limit that holds the claim, longest first.
	Holds []Hold
}

// label names one part of an admission request, to explain a hold.
type label struct{ budget, scope, unit string }

// plan is a claim turned into one store admission, with the labels of
// each part.
type plan struct {
	req    ratelimit.AdmitRequest
	gates  []label
	leases []label
	groups [][2][]label // per group: first choice, fallback
	floors []string     // per group: the budget when its first choice uses a floor
	names  []string     // per group: the budget
	costs  map[string]Cost
}

// Admit decides a claim: all limits of all named budgets together, all or
// nothing, in one store operation. It returns an error (and decides
// nothing) for an invalid claim, an unknown budget or a store fault
// (matching ratelimit.ErrStoreUnavailable); a claim that does not fit is
// not an error but an Admission that is not Admitted, with its Hold.
func (b *Budgets) Admit(ctx context.Context, c Claim) (Admission, error) {
	if err := c.Validate(); err != nil {
		return Admission{}, err
	}
	names := make([]string, 0, len(c.Costs))
	for n := range c.Costs {
		names = append(names, n)
	}
	sort.Strings(names)
	cfgs, err := b.lookupEffective(names)
	if err != nil {
		return Admission{}, err
	}
	p := newPlan(c, names, cfgs)
	got, err := b.store.Admit(ctx, p.req)
	if err != nil {
		return Admission{}, err
	}
	now := b.clock.Now()
	if !got.Allowed {
		return p.held(got, now), nil
	}
	t := Ticket{Tenant: c.Tenant, Costs: p.costs, Leases: got.Leases, Admitted: now}
	for i, g := range got.Groups {
		if !g.Fallback && p.floors[i] != "" {
			t.Floors = append(t.Floors, p.floors[i])
		}
	}
	return Admission{Admitted: true, Ticket: t}, nil
}

func newPlan(c Claim, names []string, cfgs []Config) *plan {
	p := &plan{costs: make(map[string]Cost, len(names))}
	for i, name := range names {
		cfg, cost := cfgs[i], c.Costs[name]
		charged := Cost{}
		for _, ur := range append(cfg.Limits.rates(), cfg.PerTenant.rates()...) {
			if n := cost.amount(ur.unit); n > 0 {
				charged[ur.unit] = n
			}
		}
		for u, n := range cost {
			if n > 0 {
				charged[u] = n
			}
		}
		p.costs[name] = charged
		p.gates = append(p.gates, label{name, "", LimitClosed})
		p.req.Gates = append(p.req.Gates, gateKey(name))
		p.addLeases(name, c.Tenant, cfg)
		p.addGroup(name, c.Tenant, cfg, charged)
	}
	return p
}

func (p *plan) addLeases(name, tenant string, cfg Config) {
	add := func(scope string, max int64) {
		p.leases = append(p.leases, label{name, scope, LimitInFlight})
		p.req.Leases = append(p.req.Leases, ratelimit.LeaseRequest{Key: leaseKey(name, scope, tenant),
			InFlight: ratelimit.InFlight{Max: max, TTL: cfg.leaseTTL()}})
	}
	if cfg.Limits.InFlight > 0 {
		add(ScopeTotal, cfg.Limits.InFlight)
	}
	if tenant == "" {
		return
	}
	if cfg.PerTenant.InFlight > 0 {
		add(ScopeTenant, cfg.PerTenant.InFlight)
	}
	if cfg.Share.Ceiling > 0 && cfg.Limits.InFlight > 0 {
		add(ScopeCeiling, max(1, int64(math.Ceil(cfg.Share.Ceiling*float64(cfg.Limits.InFlight)))))
	}
}

// parts is a list of requests with their labels.
type parts struct {
	reqs   []ratelimit.Request
	labels []label
}

func (ps *parts) add(name, scope, tenant, unit string, r Rate, cost int64) {
	ps.reqs = append(ps.reqs, ratelimit.Request{Key: counterKey(name, scope, tenant, unit), Limit: r.Limit(), Cost: cost})
	ps.labels = append(ps.labels, label{name, scope, unit})
}

// fits reports whether every request's cost fits its capacity.
func (ps *parts) fits() bool {
	for _, r := range ps.reqs {
		if r.Cost > r.Limit.Capacity() {
			return false
		}
	}
	return true
}

// addGroup adds the budget's window limits as one group: every rated unit
// is judged, at cost 0 when the claim does not spend it, so that a debt on
// any unit holds the whole budget. With a floor, the first choice takes
// from the total and the tenant's floor bucket, the fallback from the
// shared part (see Share).
func (p *plan) addGroup(name, tenant string, cfg Config, cost Cost) {
	var common, full, floor, shared parts
	if tenant != "" {
		for _, ur := range cfg.PerTenant.rates() {
			common.add(name, ScopeTenant, tenant, ur.unit, ur.rate, cost[ur.unit])
		}
		if cfg.Share.Ceiling > 0 {
			for _, ur := range cfg.Limits.rates() {
				common.add(name, ScopeCeiling, tenant, ur.unit, ur.rate.scaled(cfg.Share.Ceiling), cost[ur.unit])
			}
		}
	}
	for _, ur := range cfg.Limits.rates() {
		full.add(name, ScopeTotal, tenant, ur.unit, ur.rate, cost[ur.unit])
		if cfg.Share.Floor > 0 {
			s := ur.rate
			s.Burst = s.Capacity() - int64(math.Ceil(cfg.Share.reserve()*float64(s.Capacity())))
			shared.add(name, ScopeShared, tenant, ur.unit, s, cost[ur.unit])
			if tenant != "" {
				floor.add(name, ScopeFloor, tenant, ur.unit, ur.rate.scaled(cfg.Share.Floor), cost[ur.unit])
			}
		}
	}
	first, fallback, floorName := full, parts{}, ""
	if cfg.Share.Floor > 0 {
		first = shared
		if tenant != "" && floor.fits() {
			first, fallback, floorName = concat(full, floor), shared, name
			if !fallback.fits() {
				fallback = parts{}
			}
		}
	}
	first = concat(first, common)
	if len(fallback.reqs) > 0 {
		fallback = concat(fallback, common)
	}
	if len(first.reqs) == 0 {
		return
	}
	p.req.Groups = append(p.req.Groups, ratelimit.RequestGroup{Requests: first.reqs, Fallback: fallback.reqs})
	p.groups = append(p.groups, [2][]label{first.labels, fallback.labels})
	p.floors = append(p.floors, floorName)
	p.names = append(p.names, name)
}

func concat(a, b parts) parts {
	return parts{reqs: append(append([]ratelimit.Request(nil), a.reqs...), b.reqs...),
		labels: append(append([]label(nil), a.labels...), b.labels...)}
}

// held explains a denied admission.
func (p *plan) held(a ratelimit.Admission, now time.Time) Admission {
	var holds []Hold
	add := func(l label, d time.Duration) {
		holds = append(holds, Hold{Budget: l.budget, Limit: l.unit, Scope: l.scope, RetryAfter: d, Until: now.Add(d)})
	}
	for i, d := range a.Gates {
		if d > 0 {
			add(p.gates[i], d)
		}
	}
	for i, d := range a.LeaseRetry {
		if d > 0 {
			add(p.leases[i], d)
		}
	}
	for i, g := range a.Groups {
		labels := p.groups[i][0]
		if g.Fallback {
			labels = p.groups[i][1]
		}
		for j, r := range g.Results {
			if !r.Allowed {
				add(labels[j], r.RetryAfter)
			}
		}
	}
	sort.SliceStable(holds, func(i, j int) bool { return holds[i].RetryAfter > holds[j].RetryAfter })
	out := Admission{Holds: holds}
	if len(holds) > 0 {
		out.Hold = holds[0]
	}
	return out
}
