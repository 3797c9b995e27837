package queuetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
)

// testRetryNeverReady: a job cancelled before it was ever ready (still
// scheduled) and then retried is ready for the first time at the retry,
// so it takes its place in the fair order then, after the jobs that were
// ready before it, as any job becoming ready does — with and without a
// tenant.
func testRetryNeverReady(t *testing.T, f Factory) {
	t.Parallel()
	for _, tenant := range []string{"", "acme"} {
		t.Run("tenant="+tenant, func(t *testing.T) {
			t.Parallel()
			h := NewHarness(t, f)
			ctx := context.Background()
			late := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "late", Tenant: tenant, RunAt: h.Clock.Now().Add(time.Hour)})
			if _, err := h.Client.Cancel(ctx, late.ID); err != nil {
				t.Fatalf("Cancel: %v", err)
			}
			first := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "first", Tenant: tenant})
			second := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "second", Tenant: tenant})
			if _, err := h.Client.Retry(ctx, late.ID); err != nil {
				t.Fatalf("Retry: %v", err)
			}
			for i, want := range []*queue.Job{first, second, late} {
				l := h.leaseOne(t, QueueQ)
				if l.Job.ID != want.ID {
					t.Fatalf("lease %d took %s (%s), want %s (%s)", i, l.Job.ID, l.Job.Kind, want.ID, want.Kind)
				}
				h.completeWith(t, l, "ok")
			}
		})
	}
}

// testGroupDueOrder: jobs that fall due together take their places in
// the fair order by due time, whether or not they have a scope: a job of
// a group (whose tenant is none, as a plain job's) due before a plain one
// is leased first.
func testGroupDueOrder(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	now := h.Clock.Now()
	scoped := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "scoped", Group: "crawl", RunAt: now.Add(time.Second)})
	plain := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "plain", RunAt: now.Add(2 * time.Second)})
	h.Clock.Advance(3 * time.Second)
	for i, want := range []*queue.Job{scoped, plain} {
		var l queue.Lease
		// A store may move due jobs in the background: wait for it.
		testutil.Eventually(t, "a due job to lease", func() error {
			ls := h.lease(t, 1, QueueQ)
			if len(ls) == 0 {
				return errors.New("none leased yet")
			}
			l = ls[0]
			return nil
		})
		if l.Job.ID != want.ID {
			t.Fatalf("lease %d took %s (%s), want %s (%s)", i, l.Job.ID, l.Job.Kind, want.ID, want.Kind)
		}
		h.completeWith(t, l, "ok")
	}
}
