package mux

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// The settings that are not tied to one queue (tenants, groups, the event
// outbox) live on the default backend; the calls below forward to the part
// its Features name, and answer as a backend without the part would when
// it has none (the router's own Features then leave the part out). Calls
// that name a queue (SetAging, Pause of a queue) go to that queue's
// backend.

func (m *Backend) tenants(q string) (backend.TenantBackend, error) {
	f := m.routes[m.index(q)].b.Features()
	if f.Tenants == nil {
		return nil, backend.Unsupported(f.Name, queue.CapTenants)
	}
	return f.Tenants, nil
}

// SetTenant forwards to the default backend, and then to every routed
// backend that schedules by tenant, so the settings hold on their queues
// too (each backend counts the jobs on its own queues).
func (m *Backend) SetTenant(ctx context.Context, tenant string, cfg queue.TenantConfig) error {
	tb, err := m.tenants("")
	if err != nil {
		return err
	}
	if err := tb.SetTenant(ctx, tenant, cfg); err != nil {
		return err
	}
	return m.setTenantRoutes(ctx, tenant, cfg) // scheduling.go
}

// Tenant forwards to the default backend.
func (m *Backend) Tenant(ctx context.Context, tenant string) (*queue.TenantInfo, error) {
	tb, err := m.tenants("")
	if err != nil {
		return nil, err
	}
	return tb.Tenant(ctx, tenant)
}

// Tenants forwards to the default backend, where tenant settings live;
// counts of jobs on the other backends are not in it.
func (m *Backend) Tenants(ctx context.Context, f queue.TenantFilter) (*queue.TenantPage, error) {
	def := m.Default().Features()
	if def.TenantList == nil {
		return nil, backend.Unsupported(def.Name, queue.CapTenantList)
	}
	return def.TenantList.Tenants(ctx, f)
}

// SetAging forwards to the backend of q.
func (m *Backend) SetAging(ctx context.Context, q string, step int) error {
	tb, err := m.tenants(q)
	if err != nil {
		return err
	}
	return tb.SetAging(ctx, q, step)
}

// Pause forwards a queue's pause to its backend, any other scope's to the
// default backend; a tenant's pause also to every routed backend that
// schedules by tenant (it returns the latest end).
func (m *Backend) Pause(ctx context.Context, scope queue.Scope, d time.Duration) (time.Time, error) {
	q := ""
	if scope.Kind == queue.ScopeQueue {
		q = scope.Name
	}
	tb, err := m.tenants(q)
	if err != nil {
		return time.Time{}, err
	}
	end, err := tb.Pause(ctx, scope, d)
	if err != nil || scope.Kind != queue.ScopeTenant {
		return end, err
	}
	return m.pauseTenantRoutes(ctx, scope, d, end) // scheduling.go
}

func (m *Backend) groups() (backend.GroupBackend, error) {
	def := m.Default().Features()
	if def.Groups == nil {
		return nil, backend.Unsupported(def.Name, queue.CapGroups)
	}
	return def.Groups, nil
}

// CreateGroup forwards to the default backend. A group's jobs must be on
// the default backend's queues: queue.Client refuses a Group on a
// queue whose backend lacks groups.
func (m *Backend) CreateGroup(ctx context.Context, spec queue.GroupSpec) (*queue.GroupProgress, error) {
	gb, err := m.groups()
	if err != nil {
		return nil, err
	}
	return gb.CreateGroup(ctx, spec)
}

// Group forwards to the default backend.
func (m *Backend) Group(ctx context.Context, id string) (*queue.GroupProgress, error) {
	gb, err := m.groups()
	if err != nil {
		return nil, err
	}
	return gb.Group(ctx, id)
}

// CancelGroup forwards to the default backend.
func (m *Backend) CancelGroup(ctx context.Context, id string) (*queue.GroupProgress, error) {
	gb, err := m.groups()
	if err != nil {
		return nil, err
	}
	return gb.CancelGroup(ctx, id)
}

// outbox returns the default backend's outbox, or an error matching
// queue.ErrOutboxOff, so a consumer fails loudly instead of waiting.
func (m *Backend) outbox() (backend.Outbox, error) {
	def := m.Default().Features()
	if def.Outbox == nil {
		return nil, fmt.Errorf("mux: the default backend (%s) has no outbox: %w", def.Name, queue.ErrOutboxOff)
	}
	return def.Outbox, nil
}

// ClaimEvents forwards to the default backend's outbox.
func (m *Backend) ClaimEvents(ctx context.Context, max int, leaseFor time.Duration) ([]backend.ClaimedEvent, error) {
	ob, err := m.outbox()
	if err != nil {
		return nil, err
	}
	return ob.ClaimEvents(ctx, max, leaseFor)
}

// AckEvent forwards to the default backend's outbox.
func (m *Backend) AckEvent(ctx context.Context, id, token string) error {
	ob, err := m.outbox()
	if err != nil {
		return err
	}
	return ob.AckEvent(ctx, id, token)
}

// RetryEvent forwards to the default backend's outbox.
func (m *Backend) RetryEvent(ctx context.Context, id, token string, after time.Duration) error {
	ob, err := m.outbox()
	if err != nil {
		return err
	}
	return ob.RetryEvent(ctx, id, token, after)
}

// RecordDelivery forwards to the default backend's outbox.
func (m *Backend) RecordDelivery(ctx context.Context, d backend.Delivery) error {
	ob, err := m.outbox()
	if err != nil {
		return err
	}
	return ob.RecordDelivery(ctx, d)
}

// Deliveries forwards to the default backend's outbox.
func (m *Backend) Deliveries(ctx context.Context, f backend.DeliveryFilter) (*backend.DeliveryPage, error) {
	ob, err := m.outbox()
	if err != nil {
		return nil, err
	}
	return ob.Deliveries(ctx, f)
}

// PruneDeliveries forwards to the default backend's outbox.
func (m *Backend) PruneDeliveries(ctx context.Context, olderThan time.Duration, limit int) (int, error) {
	ob, err := m.outbox()
	if err != nil {
		return 0, err
	}
	return ob.PruneDeliveries(ctx, olderThan, limit)
}
