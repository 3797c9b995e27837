package queue_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/queue"
)

func TestListFilterValidate(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("q", queue.MaxNameLen+1)
	cases := []struct {
		name  string
		f     queue.ListFilter
		field string // "" when valid
	}{
		{"zero", queue.ListFilter{}, ""},
		{"every filter", queue.ListFilter{Queue: "q", Tenant: "t", Kind: "k", Group: "g", Order: queue.NewestFirst,
			States: []queue.State{queue.StatePending}, Limit: 5, Cursor: "c"}, ""},
		{"oldest", queue.ListFilter{Order: queue.OldestFirst}, ""},
		{"order", queue.ListFilter{Order: "latest"}, "ListFilter.Order"},
		{"limit", queue.ListFilter{Limit: -2}, "ListFilter.Limit"},
		{"state", queue.ListFilter{States: []queue.State{"done"}}, "ListFilter.States"},
		{"queue", queue.ListFilter{Queue: long}, "ListFilter.Queue"},
		{"tenant", queue.ListFilter{Tenant: "a\tb"}, "ListFilter.Tenant"},
		{"kind", queue.ListFilter{Kind: "\x7f"}, "ListFilter.Kind"},
		{"group", queue.ListFilter{Group: long}, "ListFilter.Group"},
	}
	for _, c := range cases {
		checkField(t, c.name, c.f.Validate(), c.field)
	}
}

func TestTenantFilterValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		f     queue.TenantFilter
		field string
	}{
		{"zero", queue.TenantFilter{}, ""},
		{"busiest", queue.TenantFilter{Order: queue.TenantsBusiest, Limit: 10}, ""},
		{"by name", queue.TenantFilter{Order: queue.TenantsByName}, ""},
		{"order", queue.TenantFilter{Order: "loudest"}, "TenantFilter.Order"},
		{"limit", queue.TenantFilter{Limit: -1}, "TenantFilter.Limit"},
	}
	for _, c := range cases {
		checkField(t, c.name, c.f.Validate(), c.field)
	}
}

// A backend without a tenant list is an *UnsupportedError naming it.
func TestTenantsUnsupported(t *testing.T) {
	t.Parallel()
	b, done := openExample()
	defer done()
	c := queue.NewClient(laneBackend{Backend: b, caps: queue.AllCapabilities.Without(queue.CapTenantList)})
	_, err := c.Tenants(t.Context(), queue.TenantFilter{})
	var ue *queue.UnsupportedError
	if !errors.As(err, &ue) || ue.Feature != queue.CapTenantList {
		t.Fatalf("Tenants = %v, want an UnsupportedError for %s", err, queue.CapTenantList)
	}
}

func checkField(t *testing.T, name string, err error, field string) {
	t.Helper()
	var ia *queue.InvalidArgumentError
	switch {
	case field == "" && err != nil:
		t.Errorf("%s: error = %v, want none", name, err)
	case field != "" && (!errors.As(err, &ia) || ia.Field != field):
		t.Errorf("%s: error = %v, want an invalid argument naming %s", name, err, field)
	}
}
