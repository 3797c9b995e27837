package queue_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// laneBackend wraps a backend and declares fewer capabilities: its
// Features keep only the parts whose capability caps has, and name it
// "lane". The wrapped backend's methods are all still there.
type laneBackend struct {
	backend.Backend
	caps queue.Capabilities
}

func (b laneBackend) Features() backend.Features {
	var f backend.Features
	if b.Backend != nil {
		f = b.Backend.Features()
	}
	f.Name, f.Capabilities = "lane", b.caps
	if !b.caps.Has(queue.CapTenants) {
		f.Tenants = nil
	}
	if !b.caps.Has(queue.CapTenantList) {
		f.TenantList = nil
	}
	if !b.caps.Has(queue.CapGroups) {
		f.Groups = nil
	}
	if !b.caps.Has(queue.CapRetry) {
		f.Retry = nil
	}
	if !b.caps.Has(queue.CapSchedules) {
		f.Schedules = nil
	}
	if !b.caps.Has(queue.CapProgress) {
		f.Progress = nil
	}
	if !b.caps.Has(queue.CapEvents) {
		f.Events = nil
	}
	return f
}

func TestCapabilitiesSet(t *testing.T) {
	t.Parallel()
	s := queue.NewCapabilities(queue.CapUnique, queue.CapDelay)
	cases := []struct {
		name      string
		got, want any
	}{
		{"Has(CapUnique)", s.Has(queue.CapUnique), true},
		{"Has(CapList)", s.Has(queue.CapList), false},
		{"String", s.String(), "unique keys, delayed jobs"},
		{"Without", s.Without(queue.CapUnique).String(), "delayed jobs"},
		{"All has last", queue.AllCapabilities.Has(queue.CapEvents), true},
		{"All count", len(queue.AllCapabilities.List()), 16},
		{"unknown name", queue.Capability(1 << 30).String(), "capability(0x40000000)"},
		{"CapabilitiesOf(lane)", backend.CapabilitiesOf(laneBackend{caps: s}), s},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// partsOnly is a backend that declares no capabilities at all but serves
// some parts: the parts decide the capabilities that are theirs.
type partsOnly struct {
	backend.Backend
	f backend.Features
}

func (p partsOnly) Features() backend.Features { return p.f }

// TestCapabilitiesFollowParts checks that the capability of an optional
// part is had exactly when the part is there, whatever is declared.
func TestCapabilitiesFollowParts(t *testing.T) {
	t.Parallel()
	b, done := openExample()
	defer done()
	full := b.Features()
	cases := []struct {
		name string
		f    backend.Features
		want queue.Capabilities
	}{
		{"parts without their bits", backend.Features{Tenants: full.Tenants, Retry: full.Retry},
			queue.NewCapabilities(queue.CapTenants, queue.CapRetry)},
		{"bits without their parts", backend.Features{Capabilities: queue.AllCapabilities},
			queue.AllCapabilities.Without(queue.CapTenants, queue.CapGroups, queue.CapRetry, queue.CapTenantList, queue.CapFlows, queue.CapSchedules,
				queue.CapProgress, queue.CapEvents)},
		{"all but the event log, which is off", full, queue.AllCapabilities.Without(queue.CapEvents)},
	}
	for _, c := range cases {
		if got := backend.CapabilitiesOf(partsOnly{f: c.f}); got != c.want {
			t.Errorf("%s: CapabilitiesOf = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCheckSpecs(t *testing.T) {
	t.Parallel()
	lane := backend.Features{Name: "lane", Capabilities: queue.AllCapabilities.Without(queue.CapUnique, queue.CapPriority, queue.CapDelay)}
	cases := []struct {
		name  string
		spec  queue.JobSpec
		field string // empty: no error
	}{
		{"plain", queue.JobSpec{Queue: "q", Kind: "k", Tenant: "acme"}, ""},
		{"unique", queue.JobSpec{Queue: "q", Kind: "k", UniqueKey: "u"}, "JobSpec.UniqueKey"},
		{"group", queue.JobSpec{Queue: "q", Kind: "k", Group: "g"}, "JobSpec.Group"},
		{"priority", queue.JobSpec{Queue: "q", Kind: "k", Priority: 1}, "JobSpec.Priority"},
		{"delay", queue.JobSpec{Queue: "q", Kind: "k", RunAt: time.Unix(1, 0)}, "JobSpec.RunAt"},
	}
	for _, c := range cases {
		err := lane.CheckSpecs([]queue.JobSpec{c.spec})
		if c.field == "" {
			if err != nil {
				t.Errorf("%s: CheckSpecs = %v, want nil", c.name, err)
			}
			continue
		}
		var ue *queue.UnsupportedError
		if !errors.As(err, &ue) || !errors.Is(err, queue.ErrUnsupported) || ue.Field != c.field || ue.Backend != "lane" {
			t.Errorf("%s: CheckSpecs = %v, want *UnsupportedError for %s", c.name, err, c.field)
		}
	}
	err := lane.CheckSpecs([]queue.JobSpec{{Queue: "q", Kind: "k"}, {Queue: "q", Kind: "k", Group: "g"}})
	want := "queue: lane does not support job groups (specs[1].JobSpec.Group is set)"
	if err == nil || err.Error() != want {
		t.Fatalf("CheckSpecs = %v, want %q", err, want)
	}
}

func ExampleFeatures_CheckSpecs() {
	lane := backend.Features{Name: "amqpqueue", Capabilities: queue.NewCapabilities(queue.CapDelay)}
	err := lane.CheckSpecs([]queue.JobSpec{{Queue: "scrape", Kind: "page", UniqueKey: "https://example.com"}})
	fmt.Println(errors.Is(err, queue.ErrUnsupported))
	fmt.Println(err)
	// Output:
	// true
	// queue: amqpqueue does not support unique keys (JobSpec.UniqueKey is set)
}

// The Client refuses a spec its backend cannot honour before the backend
// sees it: nothing is stored, and the error names the field.
func TestClientRefusesUnsupportedSpec(t *testing.T) {
	t.Parallel()
	real, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlitequeue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	c := queue.NewClient(laneBackend{Backend: real, caps: queue.AllCapabilities.Without(queue.CapGroups)})
	ctx := context.Background()
	_, err = c.EnqueueBatch(ctx, []queue.JobSpec{{Queue: "q", Kind: "k"}, {Queue: "q", Kind: "k", Group: "g"}})
	var ue *queue.UnsupportedError
	if !errors.As(err, &ue) || ue.Field != "specs[1].JobSpec.Group" {
		t.Fatalf("EnqueueBatch = %v, want *UnsupportedError for specs[1].JobSpec.Group", err)
	}
	page, err := c.List(ctx, queue.ListFilter{})
	if err != nil || len(page.Jobs) != 0 {
		t.Fatalf("List = %d jobs, %v; want none stored", len(page.Jobs), err)
	}
	if _, err := c.Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k", Tenant: "acme"}); err != nil {
		t.Fatalf("Enqueue of a supported spec = %v", err)
	}
}
