package server

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/config"
)

// otherTenant is the tenant label of every tenant without series of its
// own.
const otherTenant = "_other"

// tenantRefreshEvery is how often, at most, the tenants with series of
// their own are chosen again (when /metrics is scraped).
const tenantRefreshEvery = time.Minute

// tenantSeries bounds the tenant label: at most limit tenants have series
// of their own, every other one is counted as otherTenant. Jobs without a
// tenant keep tenant="" (one series, like a tenant that always has a
// slot).
//
// Between refreshes a free slot goes to the first tenant seen, so a
// deployment with fewer tenants than slots never sees otherTenant. A
// refresh reads the busiest tenants (queue.TenantsBusiest: most active
// jobs, then the largest backlog, then by name) and keeps a tenant's
// slot while it stays among the busiest 2×limit, so the set changes only
// when a tenant's load changes a lot (see choose).
type tenantSeries struct {
	refreshMu sync.Mutex // one refresh at a time; not held on the hot path

	mu    sync.Mutex
	limit int
	named map[string]bool
	vecs  []*prometheus.CounterVec
	next  time.Time // when a refresh is due; zero: at the next scrape
}

func newTenantSeries() *tenantSeries {
	return &tenantSeries{limit: config.DefaultTenantSeries, named: map[string]bool{}}
}

// setLimit takes a new bound (0: the default); a change makes the next
// scrape choose again.
func (t *tenantSeries) setLimit(n int) {
	if n <= 0 {
		n = config.DefaultTenantSeries
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if n != t.limit {
		t.limit, t.next = n, time.Time{}
	}
}

// labelLocked returns the label value for tenant, giving it a free slot
// when there is one. t.mu is held.
func (t *tenantSeries) labelLocked(tenant string) string {
	switch {
	case tenant == "" || t.named[tenant]:
		return tenant
	case len(t.named) < t.limit && tenant != otherTenant:
		t.named[tenant] = true
		return tenant
	}
	return otherTenant
}

// busiest reads up to n tenant names, busiest first.
type busiest func(ctx context.Context, n int) ([]string, error)

// clientBusiest reads the first page of the queue's busiest tenants.
func clientBusiest(c *queue.Client) busiest {
	return func(ctx context.Context, n int) ([]string, error) {
		page, err := c.Tenants(ctx, queue.TenantFilter{Order: queue.TenantsBusiest, Limit: n})
		if err != nil {
			return nil, err
		}
		names := make([]string, len(page.Tenants))
		for i, ti := range page.Tenants {
			names[i] = ti.Tenant
		}
		return names, nil
	}
}

// refresh chooses the tenants with series again when a refresh is due,
// and removes the series of those that lost their slot. When the busiest
// tenants cannot be read (a store fault, a backend that cannot list
// tenants) the current ones keep their slots, within the limit, and the
// error is returned; the next try is a refresh interval later.
func (t *tenantSeries) refresh(ctx context.Context, now time.Time, read busiest) error {
	t.refreshMu.Lock()
	defer t.refreshMu.Unlock()
	t.mu.Lock()
	due, limit := !now.Before(t.next), t.limit
	t.mu.Unlock()
	if !due {
		return nil
	}
	ranked, err := read(ctx, min(2*limit, queue.MaxListLimit))
	t.mu.Lock()
	defer t.mu.Unlock()
	keep := choose(t.named, ranked, t.limit)
	for name := range t.named {
		if !keep[name] {
			for _, v := range t.vecs {
				v.DeletePartialMatch(prometheus.Labels{"tenant": name})
			}
		}
	}
	t.named, t.next = keep, now.Add(tenantRefreshEvery)
	return err
}

// choose returns the tenants that have series after a refresh, at most
// limit: first the current ones still among ranked (the busiest
// 2×limit), then the busiest others, then the remaining current ones by
// name. A tenant with a slot so loses it only to a busier tenant, and
// only once it has fallen out of the busiest 2×limit.
func choose(current map[string]bool, ranked []string, limit int) map[string]bool {
	keep := make(map[string]bool, limit)
	add := func(name string) {
		if len(keep) < limit && name != "" && name != otherTenant {
			keep[name] = true
		}
	}
	for _, name := range ranked {
		if current[name] {
			add(name)
		}
	}
	for _, name := range ranked {
		add(name)
	}
	rest := make([]string, 0, len(current))
	for name := range current {
		if !slices.Contains(ranked, name) {
			rest = append(rest, name)
		}
	}
	sort.Strings(rest)
	for _, name := range rest {
		add(name)
	}
	return keep
}

// tenantVec is a CounterVec whose "tenant" label is bounded by a
// tenantSeries.
type tenantVec struct {
	vec     *prometheus.CounterVec
	tenants *tenantSeries
	pos     int // index of the tenant label
}

func newTenantVec(reg *prometheus.Registry, t *tenantSeries, name, help string, labels ...string) *tenantVec {
	v := &tenantVec{vec: counter(reg, name, help, labels...), tenants: t, pos: slices.Index(labels, "tenant")}
	t.vecs = append(t.vecs, v.vec)
	return v
}

// WithLabelValues is CounterVec's, with the tenant value replaced by its
// label. The series is created under the same lock a refresh removes
// series under, so a refresh never leaves a series it did not choose.
func (v *tenantVec) WithLabelValues(lvs ...string) prometheus.Counter {
	lvs = slices.Clone(lvs)
	v.tenants.mu.Lock()
	defer v.tenants.mu.Unlock()
	lvs[v.pos] = v.tenants.labelLocked(lvs[v.pos])
	return v.vec.WithLabelValues(lvs...)
}
