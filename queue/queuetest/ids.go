package queuetest

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// urlSafeID is what every job id must match: only the characters RFC 3986
// leaves unreserved, so an id goes into a URL path (/v1/jobs/{id}) as it
// is, whatever its queue's name.
var urlSafeID = regexp.MustCompile(`^[A-Za-z0-9._~-]+$`)

// CheckID fails the test when id is not URL-safe (see urlSafeID). The
// suite's helpers call it on every id a backend returns to them.
func CheckID(t *testing.T, what, id string) {
	t.Helper()
	if !urlSafeID.MatchString(id) {
		t.Fatalf("%s: job id %q must match %s (URL-unreserved characters only)", what, id, urlSafeID)
	}
}

// OddQueueNames are queue names with characters a URL path reserves or
// escapes: ':', ' ', '/', '?', '{', '%', '~' and non-ASCII.
var OddQueueNames = []string{"c:d", "a b", "mail/eu", "q?x=1&y", "{tag}", "50%", "a~b", "ü-队列", "plain"}

// RunIDs checks that every id a backend returns (Enqueue, duplicates,
// batches, Lease, List, Get, a group's completion job) is URL-safe for
// queue names with reserved characters, and that the transitions reached
// by that id work. Run calls it.
func RunIDs(t *testing.T, f Factory) {
	runTests(t, f, []test{
		{"Lifecycle", nil, testIDLifecycle},
		{"Batch", nil, testIDBatch},
		{"Completion", needs(queue.CapGroups), testIDCompletion},
	})
}

func testIDLifecycle(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	unique := backend.CapabilitiesOf(h.Backend).Has(queue.CapUnique)
	for _, q := range OddQueueNames {
		s := spec(q, "k")
		if unique {
			s.UniqueKey = "u/" + q
		}
		j := h.enqueue(t, s)
		if unique {
			dup, err := h.Client.EnqueueBatch(ctx, []queue.JobSpec{s})
			if err != nil || len(dup) != 1 || !dup[0].Duplicate || dup[0].Job.ID != j.ID {
				t.Fatalf("queue %q: duplicate enqueue = %+v, %v; want the first job %s", q, dup, err, j.ID)
			}
		}
		l := h.leaseOne(t, q)
		if l.Job.ID != j.ID {
			t.Fatalf("queue %q: leased %s, want %s", q, l.Job.ID, j.ID)
		}
		if st, err := h.Backend.Extend(ctx, j.ID, l.Token, testLease); err != nil {
			t.Fatalf("queue %q: Extend(%s) = %+v, %v", q, j.ID, st, err)
		}
		h.complete(t, l)
		if got := h.wantState(t, j.ID, queue.StateCompleted); got.Queue != q {
			t.Fatalf("Get(%s).Queue = %q, want %q", j.ID, got.Queue, q)
		}
	}
	if !backend.CapabilitiesOf(h.Backend).Has(queue.CapList) {
		return
	}
	for _, q := range OddQueueNames {
		page, err := h.Backend.List(ctx, queue.ListFilter{Queue: q, Limit: 10})
		if err != nil || len(page.Jobs) != 1 {
			t.Fatalf("List(%q) = %+v, %v; want its one job", q, page, err)
		}
		CheckID(t, "List", page.Jobs[0].ID)
	}
}

func testIDBatch(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	specs := make([]queue.JobSpec, len(OddQueueNames))
	for i, q := range OddQueueNames {
		specs[i] = spec(q, "k")
	}
	res, err := h.Client.EnqueueBatch(context.Background(), specs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		CheckID(t, "EnqueueBatch", r.Job.ID)
		if got := h.get(t, r.Job.ID); got.Queue != OddQueueNames[i] {
			t.Fatalf("Get(%s).Queue = %q, want %q", r.Job.ID, got.Queue, OddQueueNames[i])
		}
	}
}

// testIDCompletion checks the id of a completion job a backend enqueues
// itself, into a queue with reserved characters.
func testIDCompletion(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needGroups(t)
	const cq = "reports: {eu}/50% ü?"
	h.createGroup(t, queue.GroupSpec{ID: "g", CompletionKind: "report", CompletionQueue: cq})
	h.enqueue(t, queue.JobSpec{Queue: "crawl:a b", Kind: "page", Group: "g"})
	h.complete(t, h.leaseOne(t, "crawl:a b"))
	p := h.group(t, "g")
	if !p.Done || p.CompletionJobID == "" {
		t.Fatalf("group = %+v, want done with a completion job", p)
	}
	CheckID(t, "GroupProgress.CompletionJobID", p.CompletionJobID)
	h.Clock.Advance(time.Millisecond)
	l := h.leaseOne(t, cq)
	if l.Job.ID != p.CompletionJobID || l.Job.Queue != cq {
		t.Fatalf("leased %s of %q, want the completion job %s of %q", l.Job.ID, l.Job.Queue, p.CompletionJobID, cq)
	}
	h.complete(t, l)
	h.wantState(t, p.CompletionJobID, queue.StateCompleted)
}
