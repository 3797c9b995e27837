package budget

import (
	"regexp"
	"sort"
	"sync"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/ratelimit"
)

// Options configures New.
type Options struct {
	// Store keeps every budget's counters, leases and gates: a
	// *memlimit.Store for one process, a *redislimit.Store for a fleet.
	// Required.
	Store ratelimit.Admitter
	// Clock is where the budgets read the time to say when a hold ends;
	// nil means the system clock. The store keeps its own clock.
	Clock clock.Clock
}

// Budgets holds the definitions of named budgets and decides claims on
// them in its store. It is safe for concurrent use; Define and Remove may
// run while claims are decided (a hot reload): each claim is decided on the
// definitions as they were when it started. Counters are kept per budget
// name, unit and scope, so a redefinition that keeps a rate's window keeps
// its count.
type Budgets struct {
	store ratelimit.Admitter
	clock clock.Clock
	mu    sync.RWMutex
	defs  map[string]Config
	amu   sync.Mutex       // guards adapt
	adapt map[string]*aimd // adaptation per budget (adapt.go)
}

// New returns an empty set of budgets on opts.Store.
func New(opts Options) (*Budgets, error) {
	if opts.Store == nil {
		return nil, invalid("Options.Store", "must not be nil")
	}
	return &Budgets{store: opts.Store, clock: clock.Or(opts.Clock), defs: map[string]Config{}}, nil
}

var budgetName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// ValidName returns an error when name cannot name a budget: 1 to 128
// letters, digits, '_', '.' or '-', starting with a letter or digit.
func ValidName(name string) error {
	if !budgetName.MatchString(name) {
		return invalid("name", "must match %s, got %q", budgetName, name)
	}
	return nil
}

// Define adds the budget name or replaces its definition. It returns an
// error matching ErrInvalidConfig when name or cfg is invalid, and then
// changes nothing.
func (b *Budgets) Define(name string, cfg Config) error {
	if err := ValidName(name); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.clone()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.defs[name] = cfg
	return nil
}

// Replace swaps every definition for defs at once (what a configuration
// reload does): all are validated first, and on any error nothing changes.
func (b *Budgets) Replace(defs map[string]Config) error {
	next := make(map[string]Config, len(defs))
	for name, cfg := range defs {
		if err := ValidName(name); err != nil {
			return err
		}
		if err := cfg.Validate(); err != nil {
			return prefixed(name, err)
		}
		next[name] = cfg.clone()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.defs = next
	return nil
}

// Remove forgets the budget name; its counters stay in the store until
// they expire. It reports whether the budget was defined.
func (b *Budgets) Remove(name string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.defs[name]
	delete(b.defs, name)
	return ok
}

// Config returns the definition of the budget name.
func (b *Budgets) Config(name string) (Config, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	c, ok := b.defs[name]
	return c.clone(), ok
}

// Names returns the defined budgets' names, sorted.
func (b *Budgets) Names() []string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]string, 0, len(b.defs))
	for n := range b.defs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// lookup returns the definitions of names, failing on an unknown one.
func (b *Budgets) lookup(names []string) ([]Config, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]Config, len(names))
	for i, n := range names {
		c, ok := b.defs[n]
		if !ok {
			return nil, unknown(n)
		}
		out[i] = c
	}
	return out, nil
}

// lookupEffective is lookup with each budget's rates as adapted (see
// Adaptive).
func (b *Budgets) lookupEffective(names []string) ([]Config, error) {
	cfgs, err := b.lookup(names)
	if err != nil {
		return nil, err
	}
	for i, n := range names {
		cfgs[i] = b.effective(n, cfgs[i])
	}
	return cfgs, nil
}

func (c Config) clone() Config {
	c.Limits.Units = cloneRates(c.Limits.Units)
	c.PerTenant.Units = cloneRates(c.PerTenant.Units)
	return c
}

func cloneRates(m map[string]Rate) map[string]Rate {
	if m == nil {
		return nil
	}
	out := make(map[string]Rate, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func prefixed(name string, err error) error {
	if ce, ok := err.(*ConfigError); ok {
		return &ConfigError{Field: name + "." + ce.Field, Rule: ce.Rule}
	}
	return err
}

// Scopes of a budget's limits, as a Hold and a LimitStatus name them.
const (
	// ScopeTotal is the budget's total, shared by every claim.
	ScopeTotal = "total"
	// ScopeShared is the total less the floor reserve: what a claim not
	// under its tenant's floor may use.
	ScopeShared = "shared"
	// ScopeTenant is a tenant's own limit (Config.PerTenant).
	ScopeTenant = "tenant"
	// ScopeCeiling is a tenant's ceiling of the total (Share.Ceiling).
	ScopeCeiling = "ceiling"
	// ScopeFloor is a tenant's floor bucket (Share.Floor).
	ScopeFloor = "floor"
)

// Limit names of a Hold besides unit names.
const (
	// LimitClosed holds a claim while the budget is closed (Close, Learn).
	LimitClosed = "closed"
	// LimitInFlight holds a claim while the in-flight maximum is reached.
	LimitInFlight = "in-flight"
)

// key builds a counter, lease or gate key. Every budget key carries the
// same hash tag, so that a claim on several budgets and tenants is one
// script run on Redis Cluster too (all budgets then live in one slot).
func key(name string, parts ...string) string {
	k, err := keyspace.JoinTagged("budget", 0, 1, append([]string{"b", name}, parts...)...)
	if err != nil {
		panic("budget: " + err.Error()) // names and tenants are checked before
	}
	return k
}

func gateKey(name string) string { return key(name, "gate") }

func scopeKey(name, scope, tenant string) []string {
	if scope == ScopeTotal || scope == ScopeShared {
		return []string{ScopeTotal}
	}
	return []string{scope, tenant}
}

func counterKey(name, scope, tenant, unit string) string {
	return key(name, append(scopeKey(name, scope, tenant), unit)...)
}

func leaseKey(name, scope, tenant string) string {
	return key(name, append(scopeKey(name, scope, tenant), "inflight")...)
}
