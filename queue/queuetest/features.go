package queuetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// RunFeatures checks what a backend says of itself (backend.Features): it
// has a name, it has the capabilities of exactly the optional parts it
// serves, every part it serves answers (it does not refuse with
// ErrUnsupported), and every part it leaves out is refused by the Client
// with an *UnsupportedError naming the backend.
func RunFeatures(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	feat := h.Backend.Features()
	if feat.Name == "" {
		t.Error("Features().Name is empty; it names the backend in errors and logs")
	}
	parts := []struct {
		cap   queue.Capability
		there bool
		call  func(ctx context.Context) error
	}{
		{queue.CapTenants, feat.Tenants != nil, func(ctx context.Context) error {
			_, err := h.Client.Tenant(ctx, "features-probe")
			return err
		}},
		{queue.CapTenantList, feat.TenantList != nil, func(ctx context.Context) error {
			_, err := h.Client.Tenants(ctx, queue.TenantFilter{})
			return err
		}},
		{queue.CapGroups, feat.Groups != nil, func(ctx context.Context) error {
			_, err := h.Client.Group(ctx, "features-probe")
			return ignore(err, queue.ErrGroupNotFound)
		}},
		{queue.CapRetry, feat.Retry != nil, func(ctx context.Context) error {
			_, err := h.Client.Retry(ctx, "features-probe")
			return ignore(err, queue.ErrNotFound)
		}},
		{queue.CapSchedules, feat.Schedules != nil, func(ctx context.Context) error {
			_, err := h.Client.Schedule(ctx, "features-probe")
			return ignore(err, queue.ErrScheduleNotFound)
		}},
	}
	ctx := context.Background()
	for _, p := range parts {
		if got := backend.CapabilitiesOf(h.Backend).Has(p.cap); got != p.there {
			t.Errorf("CapabilitiesOf has %s = %v, want %v (the part decides)", p.cap, got, p.there)
		}
		checkPart(t, feat.Name, p.cap, p.there, p.call(ctx))
	}
	if feat.Outbox != nil {
		if _, err := feat.Outbox.ClaimEvents(ctx, 1, time.Second); err != nil {
			t.Errorf("Features names an outbox, but ClaimEvents = %v", err)
		}
	}
}

// checkPart checks the answer of a call that needs capability c.
func checkPart(t *testing.T, name string, c queue.Capability, there bool, err error) {
	t.Helper()
	var ue *queue.UnsupportedError
	switch {
	case there && err != nil:
		t.Errorf("the part for %s is there, but a call to it = %v", c, err)
	case !there && (!errors.As(err, &ue) || ue.Feature != c || ue.Backend != name):
		t.Errorf("without a part for %s, a call to it = %v; want an *UnsupportedError naming %s and %s", c, err, name, c)
	}
}

// ignore returns nil when err matches target.
func ignore(err, target error) error {
	if errors.Is(err, target) {
		return nil
	}
	return err
}
