package queuetype

import "time"

// Unlimited, as a TenantConfig.Limit or Backlog, lifts the bound.
const Unlimited = -1

// Bounds and defaults of tenant settings.
const (
	// DefaultWeight is a tenant's share in the fair rotation when none is
	// set.
	DefaultWeight = 1
	// MaxWeight bounds TenantConfig.Weight.
	MaxWeight = 1000
	// MinBacklog, BacklogPerSlot and MaxBacklog make the default backlog
	// cap: min(max(limit × BacklogPerSlot, MinBacklog), MaxBacklog), and
	// MaxBacklog for a tenant without a limit.
	MinBacklog     = 50_000
	BacklogPerSlot = 2000
	MaxBacklog     = 2_000_000
)

// DefaultBacklog is the backlog cap of a tenant whose concurrency limit is
// limit and whose own cap is not set: min(max(limit × 2000, 50 000),
// 2 000 000), and 2 000 000 for a tenant without a limit (limit <= 0).
func DefaultBacklog(limit int) int {
	if limit <= 0 {
		return MaxBacklog
	}
	return min(max(limit*BacklogPerSlot, MinBacklog), MaxBacklog)
}

// TenantConfig holds the scheduling settings of a tenant, or the defaults
// of every tenant (queue.Client.SetTenantDefaults). In a tenant's own settings a
// zero field means "the default's value"; in the defaults a zero field
// means the built-in default named on each field.
type TenantConfig struct {
	// Limit is how many jobs of the tenant may be active at once, across
	// every queue; Unlimited (-1) lifts it. Built-in default: Unlimited.
	// Jobs over the limit wait in StateWaiting and are released, best
	// first, as slots free.
	Limit int
	// Weight is the tenant's share when tenants take turns at equal
	// priority: a tenant of weight 3 starts three jobs for every one of a
	// tenant of weight 1. Between 1 and MaxWeight; built-in default 1.
	Weight int
	// Backlog caps how many jobs of the tenant may be ready and not yet
	// running (pending plus waiting); an enqueue that would pass it fails
	// with a *BacklogFullError and stores nothing. Unlimited (-1) lifts it.
	// Built-in default: DefaultBacklog(Limit).
	Backlog int
	// MaxWait is how long a job of the tenant may stay in StateWaiting at
	// a stretch before it fails with ErrBacklogFull as its error;
	// built-in default 0, no bound.
	MaxWait time.Duration
}

// Validate returns an *InvalidArgumentError naming the first field that
// breaks a rule.
func (c TenantConfig) Validate() error {
	if c.Limit < Unlimited {
		return InvalidArgument(Field("TenantConfig", "Limit"), "must be -1 (unlimited), 0 (default) or positive, got %d", c.Limit)
	}
	if c.Weight < 0 || c.Weight > MaxWeight {
		return InvalidArgument(Field("TenantConfig", "Weight"), "must be between 0 (default) and %d, got %d", MaxWeight, c.Weight)
	}
	if c.Backlog < Unlimited {
		return InvalidArgument(Field("TenantConfig", "Backlog"), "must be -1 (unlimited), 0 (default) or positive, got %d", c.Backlog)
	}
	return ValidDuration(Field("TenantConfig", "MaxWait"), c.MaxWait)
}

// Effective returns the settings that apply to a tenant whose own settings
// are c, given the defaults: each zero field of c takes the default's,
// and what is still zero takes its built-in default. Limit and Backlog
// come out as Unlimited or positive, Weight between 1 and MaxWeight.
func (c TenantConfig) Effective(defaults TenantConfig) TenantConfig {
	pick := func(own, def, builtin int) int {
		if own != 0 {
			return own
		}
		if def != 0 {
			return def
		}
		return builtin
	}
	out := TenantConfig{
		Limit:  pick(c.Limit, defaults.Limit, Unlimited),
		Weight: pick(c.Weight, defaults.Weight, DefaultWeight),
	}
	out.Backlog = pick(c.Backlog, defaults.Backlog, DefaultBacklog(out.Limit))
	out.MaxWait = c.MaxWait
	if out.MaxWait == 0 {
		out.MaxWait = defaults.MaxWait
	}
	return out
}

// TenantInfo is a tenant's settings and current load.
type TenantInfo struct {
	// Tenant is the tenant's name.
	Tenant string
	// Own is what was set for this tenant (zero fields follow the
	// defaults).
	Own TenantConfig
	// Effective is what applies: Own over the defaults over the built-in
	// defaults (see TenantConfig.Effective).
	Effective TenantConfig
	// Jobs of the tenant in each unfinished state (finished jobs are not
	// counted here).
	Scheduled, Pending, Waiting, Active, Retrying int64
	// PausedUntil is the end of a BackOff in force; zero when none.
	PausedUntil time.Time
}

// Backlog is the number of the tenant's jobs that count against its
// backlog cap: pending plus waiting.
func (i TenantInfo) Backlog() int64 { return i.Pending + i.Waiting }

// ScopeKind names what a Scope covers.
type ScopeKind string

// The kinds of scope BackOff and start rates apply to.
const (
	ScopeTenant ScopeKind = "tenant"
	ScopeGroup  ScopeKind = "group"
	ScopeQueue  ScopeKind = "queue"
)

// Scope is a tenant, a group or a queue: what queue.Client.BackOff pauses and a
// start rate counts.
type Scope struct {
	Kind ScopeKind
	Name string
}

func (s Scope) String() string { return string(s.Kind) + " " + s.Name }

// Validate returns an *InvalidArgumentError when the kind is unknown or the
// name empty or malformed.
func (s Scope) Validate() error {
	switch s.Kind {
	case ScopeTenant, ScopeGroup, ScopeQueue:
	default:
		return InvalidArgument(Field("Scope", "Kind"), "must be tenant, group or queue, got %q", s.Kind)
	}
	return ValidName(Field("Scope", "Name"), s.Name, true)
}

// MaxAgingStep bounds the aging step of a queue.
const MaxAgingStep = 1_000_000
