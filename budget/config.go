package budget

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// Requests is the unit every claim spends by default: one request per
// claim unless its Cost says otherwise. Limits.Requests limits it.
const Requests = "requests"

// DefaultLeaseTTL is Config.LeaseTTL's default: how long an in-flight
// lease of an admitted claim lasts when it is never settled.
const DefaultLeaseTTL = 10 * time.Minute

// Rate is a limit of Quota units per Window, counted as a token bucket
// (GCRA): the budget refills smoothly at Quota/Window and holds at most
// Burst at once. Budgets count only by token buckets because an overdraft
// is well defined there: charging beyond the bucket moves its arrival
// time further ahead, and the budget admits again once the debt has
// drained at the budget's own rate. The zero Rate means "no limit".
type Rate struct {
	// Quota is how many units the window admits. Must be positive when
	// the rate is set.
	Quota int64
	// Window is the refill period: at least 1ms, in whole milliseconds.
	Window time.Duration
	// Burst is the most units admitted at once; 0 means Quota.
	Burst int64
}

// PerMinute returns a Rate of n per minute.
func PerMinute(n int64) Rate { return Rate{Quota: n, Window: time.Minute} }

// PerSecond returns a Rate of n per second.
func PerSecond(n int64) Rate { return Rate{Quota: n, Window: time.Second} }

// IsZero reports whether r is unset (no limit).
func (r Rate) IsZero() bool { return r == Rate{} }

// Limit returns the rate as a token-bucket ratelimit.Limit.
func (r Rate) Limit() ratelimit.Limit {
	return ratelimit.Limit{Quota: r.Quota, Window: r.Window, Algorithm: ratelimit.TokenBucket, Burst: r.Burst}
}

// Capacity is the most units the rate admits at once.
func (r Rate) Capacity() int64 { return r.Limit().Capacity() }

// String describes the rate, such as "500 per 1m0s".
func (r Rate) String() string {
	s := fmt.Sprintf("%d per %s", r.Quota, r.Window)
	if r.Burst > 0 {
		s += fmt.Sprintf(" burst %d", r.Burst)
	}
	return s
}

func (r Rate) validate(field string) error {
	if r.IsZero() {
		return nil
	}
	if err := r.Limit().Validate(); err != nil {
		var ia *ratelimit.InvalidArgumentError
		if ok := asInvalid(err, &ia); ok {
			return invalid(field+"."+trimField(ia.Field), "%s", ia.Rule)
		}
		return invalid(field, "%v", err)
	}
	return nil
}

// scaled returns r with quota and burst scaled by f, rounded up and at
// least 1: a tenant's share of the total.
func (r Rate) scaled(f float64) Rate {
	up := func(n int64) int64 { return max(1, int64(math.Ceil(float64(n)*f))) }
	out := Rate{Quota: up(r.Quota), Window: r.Window}
	if r.Burst > 0 {
		out.Burst = up(r.Burst)
	}
	return out
}

// Limits are the limits of one scope of a budget: its total, or each
// tenant's own. The zero value limits nothing.
type Limits struct {
	// Requests limits the Requests unit: claims per window. Zero means no
	// limit.
	Requests Rate
	// Units limits other named units (such as "tokens", "bytes",
	// "credits") per window. A unit a claim spends that has no rate here
	// is not limited in this scope. The name "requests" is reserved for
	// the Requests field.
	Units map[string]Rate
	// InFlight is how many admitted claims may hold the budget at once,
	// until settled (or until their lease ends). 0 means no limit.
	InFlight int64
}

// IsZero reports whether l limits nothing.
func (l Limits) IsZero() bool { return l.Requests.IsZero() && len(l.Units) == 0 && l.InFlight == 0 }

// rates returns every rate of l by unit, in unit order.
func (l Limits) rates() []unitRate {
	var out []unitRate
	if !l.Requests.IsZero() {
		out = append(out, unitRate{Requests, l.Requests})
	}
	names := make([]string, 0, len(l.Units))
	for u := range l.Units {
		names = append(names, u)
	}
	sort.Strings(names)
	for _, u := range names {
		out = append(out, unitRate{u, l.Units[u]})
	}
	return out
}

type unitRate struct {
	unit string
	rate Rate
}

var unitName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)

// Validate returns an error naming the field and the rule when l cannot
// be used; field is the name l has in its config, such as "Limits".
func (l Limits) Validate(field string) error {
	if err := l.Requests.validate(field + ".Requests"); err != nil {
		return err
	}
	for u, r := range l.Units {
		f := field + ".Units[" + u + "]"
		switch {
		case u == Requests:
			return invalid(f, "is reserved: limit requests with %s.Requests", field)
		case !unitName.MatchString(u):
			return invalid(f, "unit names must match %s", unitName)
		case r.IsZero():
			return invalid(f+".Quota", "must be a positive integer, got 0")
		}
		if err := r.validate(f); err != nil {
			return err
		}
	}
	if l.InFlight < 0 {
		return invalid(field+".InFlight", "must not be negative, got %d", l.InFlight)
	}
	return nil
}

// Share is each tenant's share of a budget's total: a guaranteed minimum
// (Floor) and a burst maximum (Ceiling), as fractions of every total rate.
// The zero value gives no floor and no ceiling.
//
// The floor rule: the top Reserve of each total rate's capacity is a
// reserve that only a tenant under its floor may use. A tenant is under
// its floor while its own floor bucket (Floor × the total rate, with Floor
// × the total burst) admits the claim's cost; such a claim is counted
// against the floor bucket and the whole total. Any other claim is counted
// against the total as if its capacity were Reserve smaller. So when the
// budget is contended, whatever capacity refills goes first to tenants
// under their floor (others can take it only once more than the reserve is
// free): every tenant gets its floor as long as the floors of the tenants
// competing add up to at most the total rate. A claim whose cost is larger
// than its tenant's floor bucket can hold, or that names no tenant, is
// never under a floor. Floors apply to rates, not to the in-flight
// maximum.
type Share struct {
	// Floor is the fraction of each total rate guaranteed to each tenant,
	// in [0, 1]. 0 means no floor.
	Floor float64
	// Ceiling is the most of each total rate, and of the total in-flight
	// maximum, any one tenant may use, in [0, 1]; each is rounded up to a
	// whole unit. 0 means no ceiling. Must be at least Floor.
	Ceiling float64
	// Reserve is the fraction of each total rate's capacity kept for
	// tenants under their floor, in [0, 1). 0 means Floor (room for one
	// tenant's floor burst) when a floor is set.
	Reserve float64
}

// reserve is the reserve fraction in effect.
func (s Share) reserve() float64 {
	if s.Reserve == 0 {
		return s.Floor
	}
	return s.Reserve
}

// Validate returns an error naming the field and the rule when s cannot
// be used.
func (s Share) Validate() error {
	bad := func(v float64) bool { return math.IsNaN(v) || v < 0 || v > 1 }
	switch {
	case bad(s.Floor):
		return invalid("Share.Floor", "must be a fraction in [0, 1], got %v", s.Floor)
	case bad(s.Ceiling):
		return invalid("Share.Ceiling", "must be a fraction in [0, 1], got %v", s.Ceiling)
	case s.Ceiling > 0 && s.Ceiling < s.Floor:
		return invalid("Share.Ceiling", "must be at least Share.Floor (%v), got %v", s.Floor, s.Ceiling)
	case bad(s.Reserve) || s.Reserve == 1:
		return invalid("Share.Reserve", "must be a fraction in [0, 1), got %v", s.Reserve)
	case s.Reserve > 0 && s.Floor == 0:
		return invalid("Share.Reserve", "is only used with a Share.Floor")
	}
	return nil
}

// Config defines one budget. The zero value is a budget that limits
// nothing, which Validate refuses.
type Config struct {
	// Limits are the budget's total limits, shared by every claim.
	Limits Limits
	// PerTenant are the limits each tenant has on its own, besides the
	// total. The zero value means none.
	PerTenant Limits
	// Share sets each tenant's floor and ceiling of the total.
	Share Share
	// Adaptive lets the total rates follow the upstream (AIMD); the zero
	// value keeps them as configured.
	Adaptive Adaptive
	// LeaseTTL is how long an admitted claim holds its in-flight places
	// unless settled first: longer than the work it guards, so that a
	// crashed holder cannot keep a place for ever. 0 means
	// DefaultLeaseTTL (10 minutes).
	LeaseTTL time.Duration
}

// leaseTTL is the lease TTL in effect.
func (c Config) leaseTTL() time.Duration {
	if c.LeaseTTL == 0 {
		return DefaultLeaseTTL
	}
	return c.LeaseTTL
}

// Validate returns an error matching ErrInvalidConfig, naming the field
// and the rule, when c cannot be used.
func (c Config) Validate() error {
	if c.Limits.IsZero() && c.PerTenant.IsZero() {
		return invalid("Limits", "must set at least one limit (in Limits or PerTenant)")
	}
	if err := c.Limits.Validate("Limits"); err != nil {
		return err
	}
	if err := c.PerTenant.Validate("PerTenant"); err != nil {
		return err
	}
	if err := c.Share.Validate(); err != nil {
		return err
	}
	if (c.Share.Floor > 0 || c.Share.Ceiling > 0) && c.Limits.IsZero() {
		return invalid("Share", "needs total Limits to take a share of")
	}
	if c.Share.Floor > 0 {
		for _, ur := range c.Limits.rates() {
			if r := int64(math.Ceil(c.Share.reserve() * float64(ur.rate.Capacity()))); r >= ur.rate.Capacity() {
				return invalid("Share.Reserve", "leaves no shared capacity of %s (%s)", ur.unit, ur.rate)
			}
		}
	}
	if err := c.Adaptive.Validate(); err != nil {
		return err
	}
	if c.Adaptive.on() && c.Limits.Requests.IsZero() && len(c.Limits.Units) == 0 {
		return invalid("Adaptive", "needs total rates to adapt")
	}
	if c.LeaseTTL < 0 || c.LeaseTTL%time.Millisecond != 0 {
		return invalid("LeaseTTL", "must be a non-negative whole number of milliseconds, got %s", c.LeaseTTL)
	}
	return nil
}
