package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetype"
)

// TenantScope, GroupScope and QueueScope name a scope.
func TenantScope(tenant string) Scope { return Scope{Kind: ScopeTenant, Name: tenant} }

// GroupScope is the scope of the group id.
func GroupScope(id string) Scope { return Scope{Kind: ScopeGroup, Name: id} }

// QueueScope is the scope of the queue name.
func QueueScope(name string) Scope { return Scope{Kind: ScopeQueue, Name: name} }

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

// tenants returns b's tenant scheduler, or an *UnsupportedError.
func (c *Client) tenants() (backend.TenantBackend, error) {
	f := c.b.Features()
	if f.Tenants == nil {
		return nil, backend.Unsupported(f.Name, CapTenants)
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
	if err := queuetype.ValidName(Field("", "tenant"), tenant, true); err != nil {
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
	if err := queuetype.ValidName(Field("", "tenant"), tenant, true); err != nil {
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
	if err := queuetype.ValidName(Field("", "queue"), queue, true); err != nil {
		return err
	}
	if step < 0 || step > MaxAgingStep {
		return queuetype.InvalidArgument(Field("", "aging step"), "must be between 0 and %d, got %d", MaxAgingStep, step)
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
