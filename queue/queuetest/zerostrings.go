package queuetest

import (
	"bytes"
	"context"
	"testing"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// testZeroStrings stores jobs whose text fields are "0": a store that
// treats "0" as unset (as it may for numbers) would lose the payload, or
// keep a tenant's counts while the job forgets its tenant.
func testZeroStrings(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	have := backend.CommonCapabilities(h.Backend)
	specs := []queue.JobSpec{{Queue: QueueMail, Kind: "0", Payload: []byte("0")}}
	if have.Has(queue.CapTenants) {
		specs = append(specs, queue.JobSpec{Queue: QueueMail, Kind: "0", Payload: []byte("0"), Tenant: "0"})
	}
	if have.Has(queue.CapGroups) {
		specs = append(specs, queue.JobSpec{Queue: QueueMail, Kind: "0", Payload: []byte("0"), Group: "0"})
	}
	if have.Has(queue.CapUnique) {
		specs = append(specs, queue.JobSpec{Queue: QueueMail, Kind: "0", Payload: []byte("0"), UniqueKey: "0"})
	}
	for _, s := range specs {
		j := h.enqueue(t, s)
		check := func(when string, got *queue.Job) {
			t.Helper()
			if got.Kind != s.Kind || !bytes.Equal(got.Payload, s.Payload) || got.Tenant != s.Tenant ||
				got.Group != s.Group || got.UniqueKey != s.UniqueKey {
				t.Errorf("%s: kind %q payload %q tenant %q group %q unique key %q, want %q %q %q %q %q", when,
					got.Kind, got.Payload, got.Tenant, got.Group, got.UniqueKey,
					s.Kind, s.Payload, s.Tenant, s.Group, s.UniqueKey)
			}
		}
		check("Get after Enqueue", h.get(t, j.ID))
		l := h.leaseOne(t, QueueMail)
		if l.Job.ID != j.ID {
			t.Fatalf("Lease = %s, want %s", l.Job.ID, j.ID)
		}
		check("Lease", l.Job)
		if err := h.Backend.Complete(ctx, l.Job.ID, l.Token, nil); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		check("Get after Complete", h.wantState(t, j.ID, queue.StateCompleted))
	}
	if have.Has(queue.CapTenants) {
		if i := h.tenant(t, "0"); i.Pending+i.Waiting+i.Active != 0 {
			t.Errorf("tenant %q after its job completed: %d pending, %d waiting, %d active, want none",
				"0", i.Pending, i.Waiting, i.Active)
		}
	}
}
