package queuetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// testOutboxScheduler checks the events of jobs the scheduler ends on its
// own, outside the job's own transition call: a waiting job whose tenant's
// MaxWait passed (ended by a Lease) and the jobs CancelGroup cancels in
// several queues. Each event names its own job and queue, not those of the
// call that ended it.
func testOutboxScheduler(t *testing.T, f Factory) {
	t.Parallel()
	h := newOutboxHarness(t, f)
	ctx := context.Background()

	h.setTenant(t, "a", queue.TenantConfig{Limit: 1, MaxWait: time.Minute})
	h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "a"})
	waiting := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "late", Tenant: "a"})
	running := h.leaseOne(t, QueueQ)
	h.Clock.Advance(time.Minute)
	h.lease(t, 1, QueueQ)
	h.wantState(t, waiting.ID, queue.StateFailed)

	h.createGroup(t, queue.GroupSpec{ID: "crawl"})
	in := map[string]string{}
	for _, q := range []string{"g1", "g2", "g2"} {
		j := h.enqueue(t, queue.JobSpec{Queue: q, Kind: "page", Group: "crawl"})
		in[j.ID] = q
	}
	if _, err := h.Client.CancelGroup(ctx, "crawl"); err != nil {
		t.Fatalf("CancelGroup: %v", err)
	}
	h.complete(t, running)

	var failed, group int
	cancelled := map[string]string{}
	for _, c := range h.claimAll(t) {
		e := c.Event
		switch e.Type {
		case queue.EventJobFailed:
			failed++
			if e.JobID != waiting.ID || e.Queue != QueueQ || e.Tenant != "a" || e.Kind != "late" || !strings.Contains(e.Error, queue.ErrBacklogFull.Error()) {
				t.Errorf("job.failed event %+v; want job %s of queue q, tenant a, kind late, with ErrBacklogFull's message", e, waiting.ID)
			}
		case queue.EventJobCancelled:
			cancelled[e.JobID] = e.Queue
			if e.Group != "crawl" {
				t.Errorf("job.cancelled event %+v; want group crawl", e)
			}
		case queue.EventGroupCompleted:
			group++
		}
	}
	if failed != 1 || group != 1 {
		t.Errorf("%d job.failed and %d group.completed events, want 1 and 1", failed, group)
	}
	if len(cancelled) != len(in) {
		t.Errorf("job.cancelled events for %v, want one per job of %v", cancelled, in)
	}
	for id, q := range in {
		if cancelled[id] != q {
			t.Errorf("job.cancelled for %s names queue %q, want %q", id, cancelled[id], q)
		}
	}
}
