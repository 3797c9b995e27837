package queuetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// RunGroups runs the group tests (limits, crawl delay, completion exactly
// once, cancel, TTL). Run calls it; it skips backends without
// queue.CapGroups or the backend.GroupBackend methods.
func RunGroups(t *testing.T, f Factory) {
	runTests(t, f, []test{
		{"CreateAndProgress", needs(queue.CapGroups), testGroupProgress},
		{"DueOrder", needs(queue.CapGroups, queue.CapDelay), testGroupDueOrder},
		{"MaxConcurrency", needs(queue.CapGroups), testGroupConcurrency},
		{"CrawlDelay", needs(queue.CapGroups), testGroupCrawlDelay},
		{"Completion", needs(queue.CapGroups), testGroupCompletion},
		{"CompletionConcurrent", needs(queue.CapGroups), testGroupCompletionConcurrent},
		{"CompletionAfterCrash", needs(queue.CapGroups), testGroupCompletionCrash},
		{"Cancel", needs(queue.CapGroups), testCancelGroup},
		{"TTL", needs(queue.CapGroups), testGroupTTL},
		{"BackOff", needs(queue.CapGroups), testGroupBackOff},
		{"WithTenantLimit", needs(queue.CapGroups, queue.CapTenants), testGroupWithTenant},
		{"Retention", needs(queue.CapGroups), testGroupRetention},
	})
}

// needGroups skips the test unless the backend serves groups (the suite's
// tables declare queue.CapGroups; a backend's own tests may not).
func (h *Harness) needGroups(t *testing.T) {
	t.Helper()
	h.Need(t, queue.CapGroups)
}

func (h *Harness) createGroup(t *testing.T, g queue.GroupSpec) {
	t.Helper()
	if _, err := h.Client.CreateGroup(context.Background(), g); err != nil {
		t.Fatalf("CreateGroup(%+v): %v", g, err)
	}
}

func (h *Harness) group(t *testing.T, id string) *queue.GroupProgress {
	t.Helper()
	p, err := h.Client.Group(context.Background(), id)
	if err != nil {
		t.Fatalf("Group(%s): %v", id, err)
	}
	return p
}

// completions lists the jobs of kind in queue q.
func (h *Harness) completions(t *testing.T, q, kind string) []*queue.Job {
	t.Helper()
	page, err := h.Backend.List(context.Background(), queue.ListFilter{Queue: q, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []*queue.Job
	for _, j := range page.Jobs {
		if j.Kind == kind {
			out = append(out, j)
		}
	}
	return out
}

// wantOneCompletion checks that group id is done with exactly one
// completion job, of kind "report" in queue "reports", and returns it.
func (h *Harness) wantOneCompletion(t *testing.T, id string) (*queue.Job, queue.CompletionReport) {
	t.Helper()
	js := h.completions(t, "reports", "report")
	if len(js) != 1 {
		t.Fatalf("group %s: %d completion jobs, want exactly 1", id, len(js))
	}
	p := h.group(t, id)
	if !p.Done || p.CompletionJobID != js[0].ID || p.FinishedAt.IsZero() {
		t.Fatalf("group %s: done %v, completion job %q (listed %s), finished %v", id, p.Done, p.CompletionJobID, js[0].ID, p.FinishedAt)
	}
	var r queue.CompletionReport
	if err := json.Unmarshal(js[0].Payload, &r); err != nil || r.Group != id {
		t.Fatalf("completion payload %s: %v", js[0].Payload, err)
	}
	return js[0], r
}

func report(id string) queue.GroupSpec {
	return queue.GroupSpec{ID: id, CompletionKind: "report", CompletionQueue: "reports"}
}

func testGroupProgress(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needGroups(t)
	ctx := context.Background()
	spec := queue.GroupSpec{ID: "crawl", Tenant: "acme", MaxConcurrency: 3, MinInterval: time.Second,
		TTL: time.Hour, CompletionKind: "report", CompletionPayload: []byte(`{"x":1}`)}
	p, err := h.Client.CreateGroup(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	spec.CompletionQueue = queue.DefaultCompletionQueue
	if !reflectEqualSpec(p.GroupSpec, spec) || p.Total() != 0 || p.Done || !sameTime(p.CreatedAt, Epoch) {
		t.Fatalf("CreateGroup = %+v, want spec %+v, no jobs", p, spec)
	}
	if _, err := h.Client.CreateGroup(ctx, spec); !errors.Is(err, queue.ErrGroupExists) {
		t.Errorf("second CreateGroup = %v, want ErrGroupExists", err)
	}
	if _, err := h.Client.Group(ctx, "nope"); !errors.Is(err, queue.ErrGroupNotFound) {
		t.Errorf("Group(nope) = %v, want ErrGroupNotFound", err)
	}
	if _, err := h.Client.CreateGroup(ctx, queue.GroupSpec{ID: "bad", MaxConcurrency: -1}); !errors.Is(err, queue.ErrInvalidArgument) {
		t.Errorf("CreateGroup(bad) = %v, want ErrInvalidArgument", err)
	}
	h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Group: "crawl"})
	h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Group: "crawl", RunAt: Epoch.Add(time.Minute)})
	l := h.leaseOne(t, QueueQ)
	h.complete(t, l)
	h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Group: "crawl"})
	p = h.group(t, "crawl")
	if p.Completed != 1 || p.Scheduled != 1 || p.Waiting+p.Pending != 1 || p.Total() != 3 || p.Unfinished() != 2 {
		t.Fatalf("progress = %+v, want 1 completed, 1 scheduled, 1 ready", p)
	}
	// A job naming an unknown group creates it, with no limits.
	h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Group: "adhoc"})
	if p := h.group(t, "adhoc"); p.Pending != 1 || p.MaxConcurrency != 0 || p.CompletionKind != "" {
		t.Fatalf("implicit group = %+v, want one pending job and no limits", p)
	}
}

func reflectEqualSpec(a, b queue.GroupSpec) bool {
	return a.ID == b.ID && a.Tenant == b.Tenant && a.MaxConcurrency == b.MaxConcurrency &&
		a.MinInterval == b.MinInterval && a.TTL == b.TTL && a.CompletionKind == b.CompletionKind &&
		a.CompletionQueue == b.CompletionQueue && string(a.CompletionPayload) == string(b.CompletionPayload)
}

func testGroupConcurrency(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needGroups(t)
	h.createGroup(t, queue.GroupSpec{ID: "g", MaxConcurrency: 2})
	var jobs []*queue.Job
	for i := 0; i < 5; i++ {
		jobs = append(jobs, h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Group: "g", Priority: 5 - i}))
	}
	p := h.group(t, "g")
	if p.Pending != 2 || p.Waiting != 3 {
		t.Fatalf("progress = %d pending, %d waiting; want 2 and 3", p.Pending, p.Waiting)
	}
	free := h.enqueue(t, spec(QueueQ, "k"))
	ls := h.lease(t, 10, QueueQ)
	if len(ls) != 3 {
		t.Fatalf("Lease = %v, want the group's 2 and the free job", ids(ls))
	}
	for _, l := range ls {
		if l.Job.ID == free.ID {
			continue
		}
		h.complete(t, l)
		break
	}
	// The best waiting job (priority 1, the last enqueued) takes the slot.
	if got := h.lease(t, 10, QueueQ); len(got) != 1 || got[0].Job.ID != jobs[4].ID {
		t.Fatalf("after a completion Lease = %v, want [%s]", ids(got), jobs[4].ID)
	}
	if p := h.group(t, "g"); p.Active != 2 || p.Waiting != 2 {
		t.Fatalf("progress = %+v, want 2 active, 2 waiting", p)
	}
}

// testGroupCrawlDelay: starts of a group's jobs are MinInterval apart.
func testGroupCrawlDelay(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needGroups(t)
	const delay = 10 * time.Second
	h.createGroup(t, queue.GroupSpec{ID: "site", MinInterval: delay})
	for i := 0; i < 4; i++ {
		h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Group: "site"})
	}
	other := h.enqueue(t, spec(QueueQ, "k"))
	var starts []time.Time
	ls := h.lease(t, 10, QueueQ)
	if len(ls) != 2 {
		t.Fatalf("first Lease = %v, want one of the group and the free job", ids(ls))
	}
	for _, l := range ls {
		if l.Job.ID != other.ID {
			starts = append(starts, l.Job.StartedAt)
		}
		h.complete(t, l)
	}
	for len(starts) < 4 {
		h.Clock.Advance(delay - time.Millisecond)
		if got := h.lease(t, 10, QueueQ); len(got) != 0 {
			t.Fatalf("Lease %s after the last start = %v, want none", delay-time.Millisecond, ids(got))
		}
		h.Clock.Advance(time.Millisecond)
		got := h.lease(t, 10, QueueQ)
		if len(got) != 1 {
			t.Fatalf("Lease at the delay = %v, want one job", ids(got))
		}
		starts = append(starts, got[0].Job.StartedAt)
		h.complete(t, got[0])
	}
	for i := 1; i < len(starts); i++ {
		if d := starts[i].Sub(starts[i-1]); d < delay {
			t.Errorf("starts %d and %d are %s apart, want at least %s", i-1, i, d, delay)
		}
	}
}

func testGroupCompletion(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needGroups(t)
	ctx := context.Background()
	g := report("g")
	g.Tenant = "acme"
	h.createGroup(t, g)
	for i := 0; i < 3; i++ {
		h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Group: "g"})
	}
	ls := h.lease(t, 3, QueueQ)
	h.complete(t, ls[0])
	if _, err := h.Backend.Cancel(ctx, ls[1].Job.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Backend.Fail(ctx, ls[1].Job.ID, ls[1].Token, backend.Failure{Error: "stop"}); err != nil {
		t.Fatal(err)
	}
	if p := h.group(t, "g"); p.Done || len(h.completions(t, "reports", "report")) != 0 {
		t.Fatalf("group done with a job still running: %+v", p)
	}
	if _, err := h.Backend.Fail(ctx, ls[2].Job.ID, ls[2].Token, backend.Failure{Error: "boom", Permanent: true}); err != nil {
		t.Fatal(err)
	}
	j, r := h.wantOneCompletion(t, "g")
	want := queue.CompletionReport{Group: "g", Total: 3, Completed: 1, Failed: 1, Cancelled: 1}
	if r != want || j.Tenant != "acme" || j.State != queue.StatePending {
		t.Fatalf("completion job %+v with report %+v, want %+v for tenant acme, pending", j, r, want)
	}
	if _, err := h.Client.Enqueue(ctx, queue.JobSpec{Queue: QueueQ, Kind: "k", Group: "g"}); !errors.Is(err, queue.ErrGroupClosed) {
		t.Fatalf("Enqueue into a done group = %v, want ErrGroupClosed", err)
	}
	// A group without a completion kind is done all the same.
	h.createGroup(t, queue.GroupSpec{ID: "plain"})
	h.enqueue(t, queue.JobSpec{Queue: QueueP, Kind: "k", Group: "plain"})
	h.complete(t, h.leaseOne(t, QueueP))
	if p := h.group(t, "plain"); !p.Done || p.CompletionJobID != "" {
		t.Fatalf("plain group = %+v, want done without a completion job", p)
	}
}

// testGroupCompletionConcurrent: the group's 64 last jobs complete at the
// same moment; the completion job is enqueued once.
func testGroupCompletionConcurrent(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needGroups(t)
	const n = 64
	for round := 0; round < 3; round++ {
		id := fmt.Sprintf("g%d", round)
		h.createGroup(t, report(id))
		for i := 0; i < n; i++ {
			h.enqueue(t, queue.JobSpec{Queue: id, Kind: "k", Group: id})
		}
		ls := h.lease(t, n, id)
		if len(ls) != n {
			t.Fatalf("leased %d, want %d", len(ls), n)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make(chan error, n)
		for _, l := range ls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs <- h.Backend.Complete(context.Background(), l.Job.ID, l.Token, nil)
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		ok := 0
		for _, j := range h.completions(t, "reports", "report") {
			if r := (queue.CompletionReport{}); json.Unmarshal(j.Payload, &r) == nil && r.Group == id {
				ok++
			}
		}
		if ok != 1 {
			t.Fatalf("group %s: %d completion jobs, want 1", id, ok)
		}
	}
}

// testGroupCompletionCrash: the worker holding the group's last job dies;
// its lease expires, the job is rescued and finished by another worker, and
// the completion job comes once. A job that stalls out for good completes
// the group too.
func testGroupCompletionCrash(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needGroups(t)
	ctx := context.Background()
	h.createGroup(t, report("g"))
	for i := 0; i < 3; i++ {
		h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Group: "g"})
	}
	ls := h.lease(t, 2, QueueQ)
	h.complete(t, ls[0])
	h.complete(t, ls[1])
	dead := h.leaseOne(t, QueueQ) // its worker is killed: no heartbeat, no outcome
	h.Clock.Advance(testLease + time.Second)
	if res, err := h.Backend.RescueExpired(ctx, backend.RescueRequest{}); err != nil || res.Requeued != 1 {
		t.Fatalf("RescueExpired = %+v, %v; want 1 requeued", res, err)
	}
	if p := h.group(t, "g"); p.Done {
		t.Fatal("group done while its last job was rescued, not finished")
	}
	again := h.leaseOne(t, QueueQ)
	if again.Job.ID != dead.Job.ID {
		t.Fatalf("leased %s, want the rescued %s", again.Job.ID, dead.Job.ID)
	}
	// The dead worker's late Complete is fenced off; the new holder's lands.
	if err := h.Backend.Complete(ctx, dead.Job.ID, dead.Token, nil); !errors.Is(err, queue.ErrLeaseLost) {
		t.Fatalf("stale Complete = %v, want ErrLeaseLost", err)
	}
	h.complete(t, again)
	if err := h.Backend.Complete(ctx, again.Job.ID, again.Token, nil); !errors.Is(err, queue.ErrLeaseLost) {
		t.Fatalf("second Complete = %v, want ErrLeaseLost", err)
	}
	h.wantOneCompletion(t, "g")

	h.createGroup(t, queue.GroupSpec{ID: "stall", CompletionKind: "report", CompletionQueue: "stalls"})
	h.enqueue(t, queue.JobSpec{Queue: QueueS, Kind: "k", Group: "stall"})
	h.leaseOne(t, QueueS)
	h.Clock.Advance(testLease + time.Second)
	if res, err := h.Backend.RescueExpired(ctx, backend.RescueRequest{MaxStalls: 1}); err != nil || res.Failed != 1 {
		t.Fatalf("RescueExpired = %+v, %v; want 1 failed", res, err)
	}
	if p := h.group(t, "stall"); !p.Done || p.Failed != 1 || len(h.completions(t, "stalls", "report")) != 1 {
		t.Fatalf("stalled-out group = %+v, want done with one completion job", p)
	}
}

func testCancelGroup(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needGroups(t)
	ctx := context.Background()
	h.createGroup(t, queue.GroupSpec{ID: "g", MaxConcurrency: 2, CompletionKind: "report", CompletionQueue: "reports"})
	for i := 0; i < 4; i++ {
		h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Group: "g"})
	}
	h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Group: "g", RunAt: Epoch.Add(time.Hour)})
	run := h.leaseOne(t, QueueQ) // one running, one pending, two waiting, one scheduled
	// Enqueued after the lease: a store without a strict order across its
	// parts (the lane, whose Scheduler holds the group) could lease it first.
	bystander := h.enqueue(t, spec(QueueQ, "k"))
	p, err := h.Client.CancelGroup(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if !p.CancelRequested || p.Done || p.Cancelled != 4 || p.Active != 1 || p.Unfinished() != 1 {
		t.Fatalf("CancelGroup = %+v, want 4 cancelled, 1 still active, not done", p)
	}
	st, err := h.Backend.Extend(ctx, run.Job.ID, run.Token, testLease)
	if err != nil || !st.CancelRequested {
		t.Fatalf("Extend of the running job = %+v, %v; want CancelRequested", st, err)
	}
	if _, err := h.Client.Enqueue(ctx, queue.JobSpec{Queue: QueueQ, Kind: "k", Group: "g"}); !errors.Is(err, queue.ErrGroupClosed) {
		t.Fatalf("Enqueue into a cancelled group = %v, want ErrGroupClosed", err)
	}
	if again, err := h.Client.CancelGroup(ctx, "g"); err != nil || again.Cancelled != 4 {
		t.Fatalf("second CancelGroup = %+v, %v; want no change", again, err)
	}
	if got := ids(h.lease(t, 10, QueueQ)); !slices.Equal(got, []string{bystander.ID}) {
		t.Fatalf("Lease after CancelGroup = %v, want only the job outside the group", got)
	}
	if st, err := h.Backend.Fail(ctx, run.Job.ID, run.Token, backend.Failure{Error: "cancelled"}); err != nil || st != queue.StateCancelled {
		t.Fatalf("Fail of the cancelled running job = %s, %v; want cancelled", st, err)
	}
	_, r := h.wantOneCompletion(t, "g")
	if !r.CancelRequested || r.Cancelled != 5 || r.Total != 5 {
		t.Fatalf("report = %+v, want 5 cancelled and CancelRequested", r)
	}
	if _, err := h.Client.CancelGroup(ctx, "nope"); !errors.Is(err, queue.ErrGroupNotFound) {
		t.Errorf("CancelGroup(nope) = %v, want ErrGroupNotFound", err)
	}
}

// testGroupTTL: a group past its TTL is cancelled by the next Lease.
func testGroupTTL(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needGroups(t)
	h.createGroup(t, queue.GroupSpec{ID: "g", TTL: time.Hour, MaxConcurrency: 1})
	for i := 0; i < 3; i++ {
		h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Group: "g"})
	}
	l := h.leaseOne(t, QueueQ)
	h.Clock.Advance(time.Hour)
	h.lease(t, 1, QueueQ)
	p := h.group(t, "g")
	if !p.CancelRequested || p.Cancelled != 2 || p.Active != 1 {
		t.Fatalf("after the TTL progress = %+v, want 2 cancelled and the running job asked to stop", p)
	}
	h.complete(t, l) // it finished its work anyway
	if p := h.group(t, "g"); !p.Done || p.Completed != 1 {
		t.Fatalf("progress = %+v, want done", p)
	}
}

func testGroupBackOff(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needGroups(t)
	ctx := context.Background()
	h.createGroup(t, queue.GroupSpec{ID: "g"})
	a := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Group: "g"})
	if _, err := h.Client.BackOff(ctx, queue.GroupScope("g"), time.Minute); err != nil {
		t.Fatal(err)
	}
	h.wantState(t, a.ID, queue.StateWaiting)
	if p := h.group(t, "g"); !sameTime(p.PausedUntil, Epoch.Add(time.Minute)) {
		t.Fatalf("PausedUntil = %v", p.PausedUntil)
	}
	if got := h.lease(t, 10, QueueQ); len(got) != 0 {
		t.Fatalf("Lease in a paused group = %v, want none", ids(got))
	}
	h.Clock.Advance(time.Minute)
	if got := ids(h.lease(t, 10, QueueQ)); !slices.Equal(got, []string{a.ID}) {
		t.Fatalf("Lease after the pause = %v, want [%s]", got, a.ID)
	}
	if _, err := h.Client.BackOff(ctx, queue.GroupScope("nope"), time.Minute); !errors.Is(err, queue.ErrGroupNotFound) {
		t.Errorf("BackOff(unknown group) = %v, want ErrGroupNotFound", err)
	}
}

// testGroupWithTenant: a job held by its group does not block its
// tenant's other work, and starts once both have room.
func testGroupWithTenant(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needGroups(t)
	h.needTenants(t)
	h.setTenant(t, "a", queue.TenantConfig{Limit: 1})
	h.createGroup(t, queue.GroupSpec{ID: "g", MaxConcurrency: 1})
	busy := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "b", Group: "g"})
	lb := h.leaseOne(t, QueueQ)
	if lb.Job.ID != busy.ID {
		t.Fatalf("leased %s, want %s", lb.Job.ID, busy.ID)
	}
	inGroup := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "a", Group: "g"})
	alone := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "a", Priority: 5})
	h.wantState(t, inGroup.ID, queue.StateWaiting)
	la := h.leaseOne(t, QueueQ)
	if la.Job.ID != alone.ID {
		t.Fatalf("leased %s, want %s (the group is full, the tenant is not)", la.Job.ID, alone.ID)
	}
	h.complete(t, lb) // the group has room, the tenant has none
	h.wantState(t, inGroup.ID, queue.StateWaiting)
	h.complete(t, la) // now both have room
	h.wantState(t, inGroup.ID, queue.StatePending)
	if got := h.leaseOne(t, QueueQ); got.Job.ID != inGroup.ID {
		t.Fatalf("leased %s, want %s", got.Job.ID, inGroup.ID)
	}
}

// testGroupRetention: a done group's progress outlives its deleted jobs;
// the group goes when the longest retention has passed.
func testGroupRetention(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needGroups(t)
	ctx := context.Background()
	h.createGroup(t, queue.GroupSpec{ID: "g"})
	for i := 0; i < 2; i++ {
		h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Group: "g"})
	}
	ls := h.lease(t, 2, QueueQ)
	h.complete(t, ls[0])
	if _, err := h.Backend.Fail(ctx, ls[1].Job.ID, ls[1].Token, backend.Failure{Error: "x", Permanent: true}); err != nil {
		t.Fatal(err)
	}
	clean := func() {
		t.Helper()
		r := queue.Retention{Completed: time.Hour, Failed: 3 * time.Hour, Cancelled: time.Hour}
		if _, err := h.Backend.Cleanup(ctx, backend.CleanupRequest{Retention: r}); err != nil {
			t.Fatal(err)
		}
	}
	h.Clock.Advance(2 * time.Hour)
	clean()
	if _, err := h.Backend.Get(ctx, ls[0].Job.ID); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("completed job after its retention: %v, want ErrNotFound", err)
	}
	if p := h.group(t, "g"); p.Completed != 1 || p.Failed != 1 || !p.Done {
		t.Fatalf("progress after the cleaner = %+v, want 1 completed and 1 failed, done", p)
	}
	h.Clock.Advance(2 * time.Hour)
	clean()
	if _, err := h.Client.Group(ctx, "g"); !errors.Is(err, queue.ErrGroupNotFound) {
		t.Fatalf("Group after the longest retention = %v, want ErrGroupNotFound", err)
	}
}
