package queuetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// RunGroupRetention checks that the finished jobs of a group are kept
// while the group is open and until its completion job has finished, and
// that their retention (and the group's) starts then. Run calls it; it
// skips backends without queue.CapGroups.
func RunGroupRetention(t *testing.T, f Factory) {
	runTests(t, f, []test{
		{"LongCrawl", needs(queue.CapGroups), testGroupLongCrawl},
		{"ManyHeld", needs(queue.CapGroups), testGroupManyHeld},
		{"CompletionJobGone", needs(queue.CapGroups), testGroupCompletionGone},
	})
}

// dayRetention keeps every final state for a day.
var dayRetention = queue.Retention{Completed: 24 * time.Hour, Failed: 24 * time.Hour, Cancelled: 24 * time.Hour}

func (h *Harness) cleanup(t *testing.T, limit int) int {
	t.Helper()
	n, err := h.Backend.Cleanup(context.Background(), backend.CleanupRequest{Retention: dayRetention, Limit: limit})
	if err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	return n
}

func (h *Harness) exists(t *testing.T, id string) bool {
	t.Helper()
	_, err := h.Backend.Get(context.Background(), id)
	if err != nil && !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return err == nil
}

// wantKept fails unless every job of ids can still be read.
func (h *Harness) wantKept(t *testing.T, when string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if !h.exists(t, id) {
			t.Fatalf("%s: job %s was deleted, want it kept", when, id)
		}
	}
}

// testGroupLongCrawl is a crawl that outlives the retention: its first
// pages finish at t0, the last one two days later, and its completion job
// runs a day after that. Every page stays readable until a day after the
// completion job finished.
func testGroupLongCrawl(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needGroups(t)
	ctx := context.Background()
	h.createGroup(t, report("crawl"))
	page := queue.JobSpec{Queue: "pages", Kind: "page", Group: "crawl"}
	first, second, last := h.enqueue(t, page), h.enqueue(t, page), h.enqueue(t, page)
	loose := h.enqueue(t, spec("pages", "other"))
	for _, l := range h.lease(t, 4, "pages") {
		switch l.Job.ID {
		case second.ID:
			if _, err := h.Backend.Fail(ctx, l.Job.ID, l.Token, backend.Failure{Error: "404", Permanent: true}); err != nil {
				t.Fatal(err)
			}
		case last.ID:
			// Still crawling: it ends two days later.
		default:
			h.complete(t, l)
		}
	}

	for day := 1; day <= 2; day++ {
		h.Clock.Advance(24*time.Hour + time.Minute)
		h.cleanup(t, 0)
		h.wantKept(t, "group still open", first.ID, second.ID)
	}
	if h.exists(t, loose.ID) {
		t.Fatalf("job %s of no group outlived its retention", loose.ID)
	}
	// The last page's lease has long expired: it is rescued and runs again.
	if _, err := h.Backend.RescueExpired(ctx, backend.RescueRequest{}); err != nil {
		t.Fatal(err)
	}
	h.complete(t, h.leaseOne(t, "pages"))
	cj, _ := h.wantOneCompletion(t, "crawl")

	// A day later the completion job has not run yet: nothing goes.
	h.Clock.Advance(24*time.Hour + time.Minute)
	h.cleanup(t, 0)
	h.wantKept(t, "completion job not run", first.ID, second.ID, last.ID, cj.ID)
	if p := h.group(t, "crawl"); !p.Done || p.Completed != 2 || p.Failed != 1 {
		t.Fatalf("group = %+v, want done with 2 completed and 1 failed", p)
	}

	// The completion job runs and reads the group's jobs.
	l := h.leaseOne(t, "reports")
	if backend.CapabilitiesOf(h.Backend).Has(queue.CapList) {
		page, err := h.Backend.List(ctx, queue.ListFilter{Group: "crawl", Limit: 10})
		if err != nil || len(page.Jobs) != 3 {
			t.Fatalf("List(group crawl) in the completion job = %+v, %v; want its 3 jobs", page, err)
		}
	}
	h.complete(t, l)

	h.Clock.Advance(24*time.Hour - time.Minute)
	h.cleanup(t, 0)
	h.wantKept(t, "within a day of the completion job", first.ID, second.ID, last.ID)
	h.Clock.Advance(2 * time.Minute)
	h.cleanup(t, 0)
	for _, id := range []string{first.ID, second.ID, last.ID, cj.ID} {
		if h.exists(t, id) {
			t.Fatalf("job %s outlived the group's retention", id)
		}
	}
	if _, err := h.Client.Group(ctx, "crawl"); !errors.Is(err, queue.ErrGroupNotFound) {
		t.Fatalf("Group(crawl) after its retention = %v, want ErrGroupNotFound", err)
	}
}

// testGroupManyHeld checks that a group's finished jobs held past their
// retention do not stop the cleaner from deleting the jobs behind them,
// even when they fill whole batches.
func testGroupManyHeld(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needGroups(t)
	h.createGroup(t, queue.GroupSpec{ID: "open"})
	var held []string
	for range 6 {
		held = append(held, h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Group: "open"}).ID)
	}
	// A job due in a year keeps the group open.
	h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Group: "open", RunAt: Epoch.Add(365 * 24 * time.Hour)})
	for _, l := range h.lease(t, 6, QueueQ) {
		h.complete(t, l)
	}
	h.Clock.Advance(time.Second)
	var loose []string
	for range 3 {
		loose = append(loose, h.enqueue(t, spec(QueueQ, "k")).ID)
	}
	for _, l := range h.lease(t, 3, QueueQ) {
		if l.Job.Group != "" {
			t.Fatalf("leased %s of group %q, want only jobs of no group", l.Job.ID, l.Job.Group)
		}
		h.complete(t, l)
	}
	h.Clock.Advance(25 * time.Hour)
	deleted := 0
	for range 10 {
		deleted += h.cleanup(t, 2)
	}
	if deleted != len(loose) {
		t.Fatalf("ten cleanups of 2 deleted %d jobs, want the %d of no group", deleted, len(loose))
	}
	h.wantKept(t, "group still open", held...)
	for _, id := range loose {
		if h.exists(t, id) {
			t.Fatalf("job %s of no group outlived its retention", id)
		}
	}
}

// testGroupCompletionGone checks that a group's end outlives its
// completion job: with failed jobs kept longer than completed ones, the
// group's failed job is kept for its retention after the completion job
// finished, though that job was deleted long before.
func testGroupCompletionGone(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needGroups(t)
	ctx := context.Background()
	r := queue.Retention{Completed: time.Hour, Failed: 48 * time.Hour, Cancelled: time.Hour}
	clean := func() {
		t.Helper()
		if _, err := h.Backend.Cleanup(ctx, backend.CleanupRequest{Retention: r}); err != nil {
			t.Fatal(err)
		}
	}
	h.createGroup(t, report("g"))
	failed := h.enqueue(t, queue.JobSpec{Queue: "pages", Kind: "page", Group: "g"})
	l := h.leaseOne(t, "pages")
	if _, err := h.Backend.Fail(ctx, l.Job.ID, l.Token, backend.Failure{Error: "x", Permanent: true}); err != nil {
		t.Fatal(err)
	}
	cj, _ := h.wantOneCompletion(t, "g")
	h.Clock.Advance(30 * time.Hour) // the completion job waits a day and more
	h.complete(t, h.leaseOne(t, "reports"))
	h.Clock.Advance(time.Hour + time.Minute)
	clean()
	if h.exists(t, cj.ID) {
		t.Fatalf("completion job %s outlived its retention", cj.ID)
	}
	h.Clock.Advance(19 * time.Hour) // 50h after the failure, 20h after the group ended
	clean()
	h.wantKept(t, "failed job 20h after its group ended", failed.ID)
	h.Clock.Advance(28 * time.Hour)
	clean()
	if h.exists(t, failed.ID) {
		t.Fatalf("failed job %s outlived its retention after the group ended", failed.ID)
	}
}
