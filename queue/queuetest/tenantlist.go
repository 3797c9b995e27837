package queuetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// testTenantList checks Client.Tenants: every tenant with unfinished jobs
// or settings, by name or busiest first, paged, with the counts
// Client.Tenant reports; an *UnsupportedError on a backend without it.
func testTenantList(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	// The router's own capabilities, not those every routed backend
	// shares: a router serves the tenant list from its default backend.
	if !backend.CapabilitiesOf(h.Backend).Has(queue.CapTenantList) {
		_, err := h.Client.Tenants(ctx, queue.TenantFilter{})
		wantErr(t, "Tenants on a backend without a tenant list", err, queue.ErrUnsupported)
		return
	}
	h.Need(t, queue.CapTenants)
	if err := h.Client.SetTenant(ctx, "zeta", queue.TenantConfig{Limit: 1}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		h.enqueue(t, queue.JobSpec{Queue: "tx", Kind: "k", Tenant: "acme"})
	}
	h.lease(t, 2, "tx")
	for _, tn := range []string{"globex", "globex", "initech", "globex", "", "globex"} {
		h.enqueue(t, queue.JobSpec{Queue: "ty", Kind: "k", Tenant: tn})
	}
	h.enqueue(t, queue.JobSpec{Queue: "tz", Kind: "k", Tenant: "done"})
	l := h.leaseOne(t, "tz")
	if err := h.Backend.Complete(ctx, l.Job.ID, l.Token, nil); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		order queue.TenantOrder
		want  []string
	}{
		{"", []string{"acme", "globex", "initech", "zeta"}},
		{queue.TenantsBusiest, []string{"acme", "globex", "initech", "zeta"}},
	}
	for _, c := range cases {
		for _, limit := range []int{1, 3, 100} {
			got := h.allTenants(t, queue.TenantFilter{Order: c.order, Limit: limit})
			var names []string
			for _, info := range got {
				names = append(names, info.Tenant)
				h.sameAsTenant(t, info)
			}
			if !slices.Equal(names, c.want) {
				t.Errorf("Tenants(order %q, limit %d) = %v, want %v", c.order, limit, names, c.want)
			}
		}
	}
	// More waiting jobs than another tenant's active ones do not outrank
	// them; among tenants with none active, the larger backlog goes first.
	h.enqueue(t, queue.JobSpec{Queue: "ty", Kind: "k", Tenant: "initech"})
	for range 4 {
		h.enqueue(t, queue.JobSpec{Queue: "ty", Kind: "k", Tenant: "initech"})
	}
	var names []string
	for _, info := range h.allTenants(t, queue.TenantFilter{Order: queue.TenantsBusiest, Limit: 2}) {
		names = append(names, info.Tenant)
	}
	if want := []string{"acme", "initech", "globex", "zeta"}; !slices.Equal(names, want) {
		t.Errorf("busiest after initech grew = %v, want %v", names, want)
	}
	for _, bad := range []struct {
		f     queue.TenantFilter
		field string
	}{
		{queue.TenantFilter{Order: "loudest"}, "TenantFilter.Order"},
		{queue.TenantFilter{Limit: -1}, "TenantFilter.Limit"},
		{queue.TenantFilter{Cursor: "garbage"}, "TenantFilter.Cursor"},
		{queue.TenantFilter{Cursor: "garbage", Order: queue.TenantsBusiest}, "TenantFilter.Cursor"},
	} {
		_, err := h.Client.Tenants(ctx, bad.f)
		var ia *queue.InvalidArgumentError
		if !errors.As(err, &ia) || ia.Field != bad.field {
			t.Errorf("Tenants(%+v) error = %v, want an invalid argument naming %s", bad.f, err, bad.field)
		}
	}
}

// allTenants pages through the tenant list.
func (h *Harness) allTenants(t *testing.T, f queue.TenantFilter) []*queue.TenantInfo {
	t.Helper()
	var out []*queue.TenantInfo
	for pages := 0; ; pages++ {
		p, err := h.Client.Tenants(context.Background(), f)
		if err != nil {
			t.Fatalf("Tenants(%+v): %v", f, err)
		}
		out = append(out, p.Tenants...)
		if p.Next == "" {
			return out
		}
		if pages > 100 {
			t.Fatalf("Tenants(%+v) never ends", f)
		}
		f.Cursor = p.Next
	}
}

// sameAsTenant checks a listed tenant against Client.Tenant.
func (h *Harness) sameAsTenant(t *testing.T, got *queue.TenantInfo) {
	t.Helper()
	want, err := h.Client.Tenant(context.Background(), got.Tenant)
	if err != nil {
		t.Fatal(err)
	}
	if got.Own != want.Own || got.Effective != want.Effective || got.Scheduled != want.Scheduled ||
		got.Pending != want.Pending || got.Waiting != want.Waiting || got.Active != want.Active ||
		got.Retrying != want.Retrying || !got.PausedUntil.Equal(want.PausedUntil) {
		t.Errorf("listed tenant %+v, Tenant says %+v", got, want)
	}
}
