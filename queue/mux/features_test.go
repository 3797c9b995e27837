package mux_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/mux"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// TestFeaturesFollowTheDefault checks that the router names a part only
// when its default backend serves it: over a default with its outbox off
// or without tenants, the router has neither, though it has their methods.
func TestFeaturesFollowTheDefault(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(queuetest.Epoch)
	side := mux.Route{Name: "side", Backend: openSQLite(t, clk, sqlitequeue.Options{}), Queues: []string{"s"}}
	cases := []struct {
		name                        string
		def                         backend.Backend
		outbox, tenants, groups     bool
		retry, tenantList, notifies bool
	}{
		{"outbox on", openSQLite(t, clk, sqlitequeue.Options{Outbox: true}), true, true, true, true, true, true},
		{"outbox off", openSQLite(t, clk, sqlitequeue.Options{}), false, true, true, true, true, true},
		{"no parts", plain{openSQLite(t, clk, sqlitequeue.Options{}), queue.NewCapabilities(queue.CapDelay)},
			false, false, false, false, false, true},
	}
	for _, c := range cases {
		m := newMux(t, c.def, side)
		f := m.Features()
		got := []bool{f.Outbox != nil, f.Tenants != nil, f.Groups != nil, f.Retry != nil, f.TenantList != nil, f.Notify != nil}
		want := []bool{c.outbox, c.tenants, c.groups, c.retry, c.tenantList, c.notifies}
		names := []string{"Outbox", "Tenants", "Groups", "Retry", "TenantList", "Notify"}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: Features().%s there = %v, want %v", c.name, names[i], got[i], want[i])
			}
		}
		if f.Router == nil || f.Name != "mux" {
			t.Errorf("%s: Features() = name %q, router %v; want mux with a router", c.name, f.Name, f.Router)
		}
	}
}

// TestPartsRefusedNamingTheDefault checks the answers of a router whose
// default serves no optional part: the Client refuses each with an
// *UnsupportedError naming the default backend.
func TestPartsRefusedNamingTheDefault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(queuetest.Epoch)
	def := plain{openSQLite(t, clk, sqlitequeue.Options{}), queue.NewCapabilities(queue.CapDelay)}
	m := newMux(t, def, mux.Route{Name: "side", Backend: openSQLite(t, clk, sqlitequeue.Options{}), Queues: []string{"s"}})
	c := queue.NewClient(m)
	calls := []struct {
		feature queue.Capability
		call    func() error
	}{
		{queue.CapTenants, func() error { return c.SetTenant(ctx, "acme", queue.TenantConfig{Limit: 1}) }},
		{queue.CapTenantList, func() error { _, err := c.Tenants(ctx, queue.TenantFilter{}); return err }},
		{queue.CapGroups, func() error { _, err := c.Group(ctx, "g"); return err }},
		{queue.CapRetry, func() error { _, err := c.Retry(ctx, "1"); return err }},
	}
	for _, k := range calls {
		var ue *queue.UnsupportedError
		if err := k.call(); !errors.As(err, &ue) || ue.Feature != k.feature || ue.Backend != "mux" {
			t.Errorf("%s: error = %v, want an *UnsupportedError for it naming mux", k.feature, err)
		}
	}
	if _, err := m.ClaimEvents(ctx, 1, 0); !errors.Is(err, queue.ErrOutboxOff) {
		t.Errorf("ClaimEvents = %v, want ErrOutboxOff", err)
	}
}
