package mux

import (
	"context"
	"slices"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

var _ backend.QueueLister = (*Backend)(nil)

// QueuesOf implements backend.QueueLister: the queues routed to b, sorted;
// nil for the default backend (it holds every queue no route names) and
// for a backend the router does not hold.
func (m *Backend) QueuesOf(b backend.Backend) []string {
	var out []string
	for q, i := range m.byQueue {
		if m.routes[i].b == b {
			out = append(out, q)
		}
	}
	slices.Sort(out)
	return out
}

// tenantRoutes returns the routes after the default whose backends
// schedule by tenant: tenant settings and pauses set through the router
// reach them too, so a limit holds on their queues (each backend counts
// the tenant's jobs on its own queues).
func (m *Backend) tenantRoutes() []route {
	var out []route
	for _, r := range m.routes[1:] {
		if r.b.Features().Tenants != nil {
			out = append(out, r)
		}
	}
	return out
}

// setTenantRoutes copies a tenant's settings to the routed backends that
// schedule by tenant, after the default took them.
func (m *Backend) setTenantRoutes(ctx context.Context, tenant string, cfg queue.TenantConfig) error {
	for _, r := range m.tenantRoutes() {
		if err := r.b.Features().Tenants.SetTenant(ctx, tenant, cfg); err != nil {
			return r.wrap(err)
		}
	}
	return nil
}

// pauseTenantRoutes pauses a tenant on the routed backends that schedule
// by tenant, after the default paused it until end.
func (m *Backend) pauseTenantRoutes(ctx context.Context, scope queue.Scope, d time.Duration, end time.Time) (time.Time, error) {
	for _, r := range m.tenantRoutes() {
		got, err := r.b.Features().Tenants.Pause(ctx, scope, d)
		if err != nil {
			return time.Time{}, r.wrap(err)
		}
		if got.After(end) {
			end = got
		}
	}
	return end, nil
}
