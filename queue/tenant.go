package queue

import (
	"context"
	"errors"
	"fmt"
	"time"
)

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
// of every tenant (Client.SetTenantDefaults). In a tenant's own settings a
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
		return invalid(Field("TenantConfig", "Limit"), "must be -1 (unlimited), 0 (default) or positive, got %d", c.Limit)
	}
	if c.Weight < 0 || c.Weight > MaxWeight {
		return invalid(Field("TenantConfig", "Weight"), "must be between 0 (default) and %d, got %d", MaxWeight, c.Weight)
	}
	if c.Backlog < Unlimited {
		return invalid(Field("TenantConfig", "Backlog"), "must be -1 (unlimited), 0 (default) or positive, got %d", c.Backlog)
	}
	return validDuration(Field("TenantConfig", "MaxWait"), c.MaxWait)
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

// Scope is a tenant, a group or a queue: what Client.BackOff pauses and a
// start rate counts.
type Scope struct {
	Kind ScopeKind
	Name string
}

// TenantScope, GroupScope and QueueScope name a scope.
func TenantScope(tenant string) Scope { return Scope{Kind: ScopeTenant, Name: tenant} }

// GroupScope is the scope of the group id.
func GroupScope(id string) Scope { return Scope{Kind: ScopeGroup, Name: id} }

// QueueScope is the scope of the queue name.
func QueueScope(name string) Scope { return Scope{Kind: ScopeQueue, Name: name} }

func (s Scope) String() string { return string(s.Kind) + " " + s.Name }

// Validate returns an *InvalidArgumentError when the kind is unknown or the
// name empty or malformed.
func (s Scope) Validate() error {
	switch s.Kind {
	case ScopeTenant, ScopeGroup, ScopeQueue:
	default:
		return invalid(Field("Scope", "Kind"), "must be tenant, group or queue, got %q", s.Kind)
	}
	return validName(Field("Scope", "Name"), s.Name, true)
}

// ErrBacklogFull is matched by *BacklogFullError, and is the error of a job
// that waited longer than its tenant's MaxWait.
var ErrBacklogFull = errors.New("queue: tenant backlog full")

// BacklogFullError means an enqueue would have taken a tenant's backlog
// (its pending and waiting jobs) over its cap. Nothing was stored.
type BacklogFullError struct {
	Tenant  string
	Backlog int64 // pending plus waiting jobs before the enqueue
	Cap     int64
}

func (e *BacklogFullError) Error() string {
	return fmt.Sprintf("queue: tenant %s backlog full (%d jobs ready or waiting, cap %d)", e.Tenant, e.Backlog, e.Cap)
}

// Is makes errors.Is(err, ErrBacklogFull) true.
func (e *BacklogFullError) Is(target error) bool { return target == ErrBacklogFull }

// TenantBackend is the part a Backend with CapTenants serves
// (Features.Tenants): per-tenant limits, the fair order and pauses. The rules below
// hold inside the same atomic steps as Backend's transitions; queuetest
// checks them.
//
// # Limit and the waiting state
//
// A tenant's slot is the lease of its job: the number of the tenant's
// active jobs never exceeds its effective Limit, checked in the atomic
// Lease step against a count that the same steps keep (an index or a
// counter written by every transition into or out of active, never a
// second record that can drift from the job's state). So a slot frees
// exactly when its job leaves active: completed, failed, retrying,
// snoozed, requeued, cancelled, or rescued after its lease expired.
//
// A ready job (enqueued without delay, or due) is "admitted" (pending)
// when its tenant and its group (see GroupBackend) both have room:
// active + pending < limit, not paused, and for a group with MinInterval
// no other pending job; otherwise it waits (StateWaiting). Jobs without a
// tenant have no limit. Whenever room appears (a job leaves active or
// pending, a limit rises, a pause ends), the step that made it releases
// the scope's waiting jobs, best first in the fair order below, as many as
// there is room for (a job whose other scope is still full stays waiting).
// Lease checks the rule again for every job it hands out; a pending job
// that it finds blocked moves to waiting.
//
// # Fair order
//
// Each queue has a virtual time V, the largest start tag of the jobs
// leased from it (0 at first); each (queue, tenant) pair has a finish tag
// F (0 at first). When a job first becomes ready it gets the start tag
// max(V, F) and F becomes that tag plus FairUnit/weight (FairUnit, FairTag
// and FairOrder are in package queue/backend). It keeps the tag for life:
// retries, snoozes and requeues go back to their place. Ready jobs are
// ordered by FairOrder: (priority, start, sequence) without aging; with
// the queue's aging step S, (start + priority × S × FairUnit, sequence). So at equal priority backlogged tenants take turns by weight,
// a newcomer starts at V (next in line, not behind another tenant's
// flood), and with aging a job gains one priority level every S rounds
// (a round is one job per backlogged tenant of weight 1). Lease hands out
// pending jobs in this order; waiting jobs of a scope are released in it.
//
// # Backlog, MaxWait and pauses
//
// Enqueue fails whole with a *BacklogFullError when a spec that is ready
// at once would take its tenant's pending + waiting count over its
// Backlog. A job that has waited longer than MaxWait (measured from when
// it last entered StateWaiting) fails with an error naming ErrBacklogFull,
// at the next Lease after its deadline. Pause stops a scope until a time:
// a paused tenant or group admits nothing and its pending jobs move to
// waiting; a paused queue is skipped by Lease.
type TenantBackend interface {
	// SetTenant stores cfg as the tenant's own settings, or as the
	// defaults when tenant is empty, and applies it at once in the same
	// step: waiting jobs are released if the limit rose.
	SetTenant(ctx context.Context, tenant string, cfg TenantConfig) error
	// Tenant returns the tenant's settings and job counts. A tenant never
	// seen is not an error: it has the defaults and no jobs.
	Tenant(ctx context.Context, tenant string) (*TenantInfo, error)
	// SetAging sets the aging step of queue (0 turns aging off). It
	// applies to jobs that become ready afterwards.
	SetAging(ctx context.Context, queue string, step int) error
	// Pause stops scope starting jobs until now + d (keeping a later end
	// already in force) and returns the end; d <= 0 ends a pause at once.
	Pause(ctx context.Context, scope Scope, d time.Duration) (time.Time, error)
}

// MaxAgingStep bounds the aging step of a queue.
const MaxAgingStep = 1_000_000

// tenants returns b's tenant scheduler, or an *UnsupportedError.
func (c *Client) tenants() (TenantBackend, error) {
	f := c.b.Features()
	if f.Tenants == nil {
		return nil, f.unsupported(CapTenants)
	}
	return f.Tenants, nil
}

// SetTenantDefaults sets the settings of every tenant that has none of its
// own (field by field: a tenant's zero fields follow these). It applies at
// once: if the default limit rose, waiting jobs start.
func (c *Client) SetTenantDefaults(ctx context.Context, cfg TenantConfig) error {
	tb, err := c.tenants()
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	return tb.SetTenant(ctx, "", cfg)
}

// SetTenant sets a tenant's own settings, replacing any earlier ones (the
// zero TenantConfig makes it follow the defaults again).
func (c *Client) SetTenant(ctx context.Context, tenant string, cfg TenantConfig) error {
	tb, err := c.tenants()
	if err != nil {
		return err
	}
	if err := validName(Field("", "tenant"), tenant, true); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	return tb.SetTenant(ctx, tenant, cfg)
}

// SetTenantLimit sets only the tenant's concurrency limit (0 follows the
// default again, Unlimited lifts it), keeping its other settings. It reads
// them and writes them back: a change of the tenant's other settings made
// at the same moment by someone else may be lost.
func (c *Client) SetTenantLimit(ctx context.Context, tenant string, n int) error {
	info, err := c.Tenant(ctx, tenant)
	if err != nil {
		return err
	}
	own := info.Own
	own.Limit = n
	return c.SetTenant(ctx, tenant, own)
}

// Tenant returns a tenant's settings and how many of its jobs are in each
// unfinished state.
func (c *Client) Tenant(ctx context.Context, tenant string) (*TenantInfo, error) {
	tb, err := c.tenants()
	if err != nil {
		return nil, err
	}
	if err := validName(Field("", "tenant"), tenant, true); err != nil {
		return nil, err
	}
	return tb.Tenant(ctx, tenant)
}

// SetAging sets the aging step of a queue, in rounds of the fair rotation
// (see TenantBackend): with step S, a ready job gains one priority level
// every S rounds it waits, so low priorities never starve. 0 (the
// default) turns aging off: strict priority order. It applies to jobs that
// become ready afterwards.
func (c *Client) SetAging(ctx context.Context, queue string, step int) error {
	tb, err := c.tenants()
	if err != nil {
		return err
	}
	if err := validName(Field("", "queue"), queue, true); err != nil {
		return err
	}
	if step < 0 || step > MaxAgingStep {
		return invalid(Field("", "aging step"), "must be between 0 and %d, got %d", MaxAgingStep, step)
	}
	return tb.SetAging(ctx, queue, step)
}

// BackOff pauses a tenant, a group or a queue for d, such as after an
// upstream answered 429: its jobs start no more until then (running ones
// go on), and it resumes by itself. A later end already in force is kept;
// d <= 0 resumes at once. It returns when the pause ends.
func (c *Client) BackOff(ctx context.Context, scope Scope, d time.Duration) (time.Time, error) {
	tb, err := c.tenants()
	if err != nil {
		return time.Time{}, err
	}
	if err := scope.Validate(); err != nil {
		return time.Time{}, err
	}
	return tb.Pause(ctx, scope, d)
}
