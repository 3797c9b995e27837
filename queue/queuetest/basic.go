package queuetest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

func testEnqueue(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	s := queue.JobSpec{
		Queue: QueueMail, Kind: "send", Payload: []byte(`{"to":"a@b"}`), Tenant: "acme",
		Priority: 3, Timeout: time.Minute, Group: "g1",
	}
	j := h.enqueue(t, s)
	if j.ID == "" {
		t.Fatal("Enqueue: empty ID")
	}
	got := h.get(t, j.ID)
	checks := []struct {
		name      string
		got, want any
	}{
		{"Queue", got.Queue, QueueMail},
		{"Kind", got.Kind, "send"},
		{"Tenant", got.Tenant, "acme"},
		{"Group", got.Group, "g1"},
		{"Priority", got.Priority, 3},
		{"Timeout", got.Timeout, time.Minute},
		{"MaxAttempts", got.MaxAttempts, queue.DefaultMaxAttempts},
		{"State", got.State, queue.StatePending},
		{"Attempt", got.Attempt, 0},
		{"CreatedAt", sameTime(got.CreatedAt, Epoch), true},
		{"LeaseUntil.IsZero", got.LeaseUntil.IsZero(), true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("Get(%s).%s = %v, want %v", j.ID, c.name, c.got, c.want)
		}
	}
	if !bytes.Equal(got.Payload, s.Payload) {
		t.Errorf("Payload = %q, want %q", got.Payload, s.Payload)
	}
	if _, err := h.Backend.Get(context.Background(), "no-such-job"); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("Get(missing) error = %v, want ErrNotFound", err)
	}

	res, err := h.Client.EnqueueBatch(context.Background(), []queue.JobSpec{spec(QueueMail, "a"), spec(QueueMail, "b"), spec(QueueOther, "c")})
	if err != nil {
		t.Fatalf("EnqueueBatch: %v", err)
	}
	seen := map[string]bool{j.ID: true}
	for i, r := range res {
		if r.Duplicate || r.Job == nil || seen[r.Job.ID] {
			t.Fatalf("EnqueueBatch[%d] = %+v, want a new distinct job", i, r)
		}
		seen[r.Job.ID] = true
	}
	if res[2].Job.Queue != QueueOther || res[1].Job.Kind != "b" {
		t.Errorf("EnqueueBatch results out of order: %+v %+v", res[1].Job, res[2].Job)
	}
}

func testBadInput(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	big := make([]byte, queue.DefaultMaxPayload+1)
	cases := []struct {
		name  string
		spec  queue.JobSpec
		field string
	}{
		{"empty queue", queue.JobSpec{Kind: "k"}, "JobSpec.Queue"},
		{"empty kind", queue.JobSpec{Queue: QueueQ}, "JobSpec.Kind"},
		{"negative priority", queue.JobSpec{Queue: QueueQ, Kind: "k", Priority: -1}, "JobSpec.Priority"},
		{"priority too big", queue.JobSpec{Queue: QueueQ, Kind: "k", Priority: queue.MaxPriority + 1}, "JobSpec.Priority"},
		{"negative attempts", queue.JobSpec{Queue: QueueQ, Kind: "k", MaxAttempts: -1}, "JobSpec.MaxAttempts"},
		{"negative timeout", queue.JobSpec{Queue: QueueQ, Kind: "k", Timeout: -time.Second}, "JobSpec.Timeout"},
		{"payload too big", queue.JobSpec{Queue: QueueQ, Kind: "k", Payload: big}, "JobSpec.Payload"},
		{"unique for without key", queue.JobSpec{Queue: QueueQ, Kind: "k", UniqueFor: time.Hour}, "JobSpec.UniqueFor"},
		{"control char", queue.JobSpec{Queue: "q\n", Kind: "k"}, "JobSpec.Queue"},
		{"long kind", queue.JobSpec{Queue: QueueQ, Kind: strings.Repeat("k", queue.MaxNameLen+1)}, "JobSpec.Kind"},
	}
	for _, c := range cases {
		_, err := h.Client.Enqueue(ctx, c.spec)
		var ia *queue.InvalidArgumentError
		if !errors.As(err, &ia) || !errors.Is(err, queue.ErrInvalidArgument) {
			t.Errorf("%s: error = %v, want *InvalidArgumentError", c.name, err)
			continue
		}
		if ia.Field != c.field || !strings.HasPrefix(err.Error(), "queue: "+c.field) {
			t.Errorf("%s: error = %q (field %q), want field %q", c.name, err, ia.Field, c.field)
		}
	}
	// A batch with one bad spec stores nothing.
	_, err := h.Client.EnqueueBatch(ctx, []queue.JobSpec{spec(QueueQ, "ok"), {Queue: QueueQ}})
	if !errors.Is(err, queue.ErrInvalidArgument) || !strings.Contains(err.Error(), "specs[1].JobSpec.Kind") {
		t.Fatalf("EnqueueBatch(bad) error = %v, want specs[1].JobSpec.Kind", err)
	}
	small := queue.NewClient(h.Backend, queue.ClientConfig{MaxPayload: 4})
	if _, err := small.Enqueue(ctx, queue.JobSpec{Queue: QueueQ, Kind: "k", Payload: []byte("12345")}); !errors.Is(err, queue.ErrInvalidArgument) {
		t.Errorf("MaxPayload 4, payload 5: error = %v, want ErrInvalidArgument", err)
	}
	st, err := h.Client.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 0 {
		t.Fatalf("after bad input Stats = %+v, want no jobs", st)
	}
}

func testStateMachine(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	j := h.enqueue(t, spec(QueueQ, "k"))
	l := h.leaseOne(t, QueueQ)
	if l.Job.ID != j.ID || l.Token == "" {
		t.Fatalf("Lease = %+v, want job %s with a token", l, j.ID)
	}
	a := h.wantState(t, j.ID, queue.StateActive)
	if a.Attempt != 1 || a.WorkerID != "w-test" || !sameTime(a.LeaseUntil, Epoch.Add(testLease)) || !sameTime(a.StartedAt, Epoch) {
		t.Fatalf("active job = attempt %d worker %q lease %v started %v", a.Attempt, a.WorkerID, a.LeaseUntil, a.StartedAt)
	}
	if !sameTime(l.Job.LeaseUntil, Epoch.Add(testLease)) || l.Job.State != queue.StateActive {
		t.Fatalf("leased job = %s until %v", l.Job.State, l.Job.LeaseUntil)
	}
	if more := h.lease(t, 10, QueueQ); len(more) != 0 {
		t.Fatalf("second Lease got %v, want nothing (job already active)", ids(more))
	}
	h.Clock.Advance(time.Second)
	if err := h.Backend.Complete(ctx, j.ID, l.Token, []byte("done")); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	c := h.wantState(t, j.ID, queue.StateCompleted)
	if string(c.Result) != "done" || !sameTime(c.FinishedAt, Epoch.Add(time.Second)) || !c.LeaseUntil.IsZero() || c.WorkerID != "" {
		t.Fatalf("completed job = result %q finished %v lease %v worker %q", c.Result, c.FinishedAt, c.LeaseUntil, c.WorkerID)
	}

	// Snooze gives the attempt back and schedules the job.
	j2 := h.enqueue(t, spec(QueueQ, "k"))
	l2 := h.leaseOne(t, QueueQ)
	st, err := h.Backend.Snooze(ctx, j2.ID, l2.Token, time.Minute)
	if err != nil || st != queue.StateScheduled {
		t.Fatalf("Snooze = %s, %v; want scheduled", st, err)
	}
	s := h.wantState(t, j2.ID, queue.StateScheduled)
	if s.Attempt != 0 || !sameTime(s.RunAt, Epoch.Add(time.Second+time.Minute)) || !s.LeaseUntil.IsZero() {
		t.Fatalf("snoozed job = attempt %d runAt %v lease %v", s.Attempt, s.RunAt, s.LeaseUntil)
	}
	if got := h.lease(t, 1, QueueQ); len(got) != 0 {
		t.Fatalf("Lease before snooze ends got %v", ids(got))
	}
	h.Clock.Advance(time.Minute)
	l2 = h.leaseOne(t, QueueQ)
	if l2.Job.Attempt != 1 {
		t.Fatalf("after snooze Attempt = %d, want 1", l2.Job.Attempt)
	}
	// Requeue gives the attempt back and makes the job pending at once.
	if st, err := h.Backend.Requeue(ctx, j2.ID, l2.Token); err != nil || st != queue.StatePending {
		t.Fatalf("Requeue = %s, %v; want pending", st, err)
	}
	if r := h.wantState(t, j2.ID, queue.StatePending); r.Attempt != 0 || !r.LeaseUntil.IsZero() {
		t.Fatalf("requeued job = attempt %d lease %v", r.Attempt, r.LeaseUntil)
	}
	// Snooze with no delay is pending at once.
	l2 = h.leaseOne(t, QueueQ)
	if st, err := h.Backend.Snooze(ctx, j2.ID, l2.Token, 0); err != nil || st != queue.StatePending {
		t.Fatalf("Snooze(0) = %s, %v; want pending", st, err)
	}
}

func testFencing(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	j := h.enqueue(t, spec(QueueQ, "k"))
	old := h.leaseOne(t, QueueQ)
	// The lease expires and is rescued; the job is leased again.
	h.Clock.Advance(testLease + time.Second)
	if r, err := h.Backend.RescueExpired(ctx, backend.RescueRequest{}); err != nil || r.Requeued != 1 {
		t.Fatalf("RescueExpired = %+v, %v; want 1 requeued", r, err)
	}
	cur := h.leaseOne(t, QueueQ)
	if cur.Token == old.Token {
		t.Fatal("a new lease reused the old token")
	}
	stale := []struct {
		name string
		op   func() error
	}{
		{"Complete", func() error { return h.Backend.Complete(ctx, j.ID, old.Token, nil) }},
		{"Fail", func() error { _, err := h.Backend.Fail(ctx, j.ID, old.Token, backend.Failure{Error: "x"}); return err }},
		{"Snooze", func() error { _, err := h.Backend.Snooze(ctx, j.ID, old.Token, time.Second); return err }},
		{"Requeue", func() error { _, err := h.Backend.Requeue(ctx, j.ID, old.Token); return err }},
		{"Extend", func() error { _, err := h.Backend.Extend(ctx, j.ID, old.Token, time.Minute); return err }},
		{"Complete(empty token)", func() error { return h.Backend.Complete(ctx, j.ID, "", nil) }},
	}
	for _, s := range stale {
		wantErr(t, s.name+" with a stale token", s.op(), queue.ErrLeaseLost)
	}
	a := h.wantState(t, j.ID, queue.StateActive)
	if a.Stalls != 1 || a.Attempt != 1 {
		t.Fatalf("after stale calls job = stalls %d attempt %d, want 1, 1", a.Stalls, a.Attempt)
	}
	// The current holder can extend, then complete; afterwards its token is dead too.
	h.Clock.Advance(time.Second)
	ls, err := h.Backend.Extend(ctx, j.ID, cur.Token, time.Minute)
	if err != nil || !sameTime(ls.Until, h.Clock.Now().Add(time.Minute)) || ls.CancelRequested {
		t.Fatalf("Extend = %+v, %v; want until now+1m", ls, err)
	}
	if got := h.get(t, j.ID); !sameTime(got.LeaseUntil, ls.Until) {
		t.Fatalf("LeaseUntil = %v, want %v", got.LeaseUntil, ls.Until)
	}
	if err := h.Backend.Complete(ctx, j.ID, cur.Token, nil); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	wantErr(t, "Complete twice", h.Backend.Complete(ctx, j.ID, cur.Token, nil), queue.ErrLeaseLost)
	wantErr(t, "Complete(missing)", h.Backend.Complete(ctx, "no-such-job", cur.Token, nil), queue.ErrNotFound)
	h.wantState(t, j.ID, queue.StateCompleted)
}

func testDelays(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	late := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", RunAt: Epoch.Add(2 * time.Hour)})
	soon := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", RunAt: Epoch.Add(time.Hour)})
	past := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", RunAt: Epoch.Add(-time.Hour)})
	h.wantState(t, late.ID, queue.StateScheduled)
	h.wantState(t, soon.ID, queue.StateScheduled)
	h.wantState(t, past.ID, queue.StatePending)
	if got := ids(h.lease(t, 10, QueueQ)); !slices.Equal(got, []string{past.ID}) {
		t.Fatalf("Lease at start = %v, want [%s]", got, past.ID)
	}
	h.Clock.Advance(time.Hour - time.Millisecond)
	if got := h.lease(t, 10, QueueQ); len(got) != 0 {
		t.Fatalf("Lease before due = %v, want none", ids(got))
	}
	h.Clock.Advance(time.Millisecond)
	if got := ids(h.lease(t, 10, QueueQ)); !slices.Equal(got, []string{soon.ID}) {
		t.Fatalf("Lease at 1h = %v, want [%s]", got, soon.ID)
	}
	h.wantState(t, late.ID, queue.StateScheduled)
	h.Clock.Advance(2 * time.Hour)
	if got := ids(h.lease(t, 10, QueueQ)); !slices.Equal(got, []string{late.ID}) {
		t.Fatalf("Lease at 3h = %v, want [%s]", got, late.ID)
	}
}

func testPriorityFIFO(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	prios := []int{5, 1, 5, 0, 1, 5, 0, 3}
	var want []string
	jobs := make([]*queue.Job, len(prios))
	for i, p := range prios {
		jobs[i] = h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Priority: p})
	}
	for _, p := range []int{0, 1, 3, 5} {
		for i, q := range prios {
			if q == p {
				want = append(want, jobs[i].ID)
			}
		}
	}
	// Jobs enqueued in the same instant must still come out in enqueue
	// order: the backend uses a sequence, not timestamps alone.
	var got []string
	for _, n := range []int{3, 1, 4} {
		got = append(got, ids(h.lease(t, n, QueueQ))...)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("lease order = %v, want %v (by priority, then enqueue order)", got, want)
	}
	// A job that failed and is due again keeps its place.
	a := h.enqueue(t, queue.JobSpec{Queue: QueueR, Kind: "k"})
	l := h.leaseOne(t, QueueR)
	b := h.enqueue(t, queue.JobSpec{Queue: QueueR, Kind: "k"})
	if _, err := h.Backend.Fail(context.Background(), a.ID, l.Token, backend.Failure{Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	if got := ids(h.lease(t, 2, QueueR)); !slices.Equal(got, []string{a.ID, b.ID}) {
		t.Fatalf("after retry lease order = %v, want [%s %s]", got, a.ID, b.ID)
	}
	// Several queues in one request: only those queues.
	x := h.enqueue(t, spec(QueueX, "k"))
	h.enqueue(t, spec(QueueY, "k"))
	z := h.enqueue(t, spec(QueueZ, "k"))
	got = ids(h.lease(t, 10, QueueX, QueueZ))
	slices.Sort(got)
	w := []string{x.ID, z.ID}
	slices.Sort(w)
	if !slices.Equal(got, w) {
		t.Fatalf("Lease(x, z) = %v, want %v", got, w)
	}
}

func testUnique(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	first := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", UniqueKey: "u1", UniqueFor: time.Hour})
	dup, err := h.Client.Enqueue(ctx, queue.JobSpec{Queue: QueueQ, Kind: "k", UniqueKey: "u1", UniqueFor: time.Hour})
	if !errors.Is(err, queue.ErrDuplicate) || dup == nil || dup.ID != first.ID {
		t.Fatalf("second Enqueue = %v, %v; want job %s and ErrDuplicate", dup, err, first.ID)
	}
	// Another queue is another key space.
	if _, err := h.Client.Enqueue(ctx, queue.JobSpec{Queue: QueueOther, Kind: "k", UniqueKey: "u1", UniqueFor: time.Hour}); err != nil {
		t.Fatalf("same key, other queue: %v", err)
	}
	// The window holds even after the job completed...
	l := h.leaseOne(t, QueueQ)
	if err := h.Backend.Complete(ctx, first.ID, l.Token, nil); err != nil {
		t.Fatal(err)
	}
	h.Clock.Advance(time.Hour - time.Second)
	if _, err := h.Client.Enqueue(ctx, queue.JobSpec{Queue: QueueQ, Kind: "k", UniqueKey: "u1", UniqueFor: time.Hour}); !errors.Is(err, queue.ErrDuplicate) {
		t.Fatalf("inside window after completion: error = %v, want ErrDuplicate", err)
	}
	// ...and ends with it.
	h.Clock.Advance(time.Second)
	again := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", UniqueKey: "u1", UniqueFor: time.Hour})
	if again.ID == first.ID {
		t.Fatal("after the window the old job was returned")
	}

	// UniqueFor 0 holds the key until the job is final.
	held := h.enqueue(t, queue.JobSpec{Queue: QueueW, Kind: "k", UniqueKey: "u2"})
	h.Clock.Advance(48 * time.Hour)
	if _, err := h.Client.Enqueue(ctx, queue.JobSpec{Queue: QueueW, Kind: "k", UniqueKey: "u2"}); !errors.Is(err, queue.ErrDuplicate) {
		t.Fatalf("key held by a pending job: error = %v, want ErrDuplicate", err)
	}
	if _, err := h.Client.Cancel(ctx, held.ID); err != nil {
		t.Fatal(err)
	}
	h.enqueue(t, queue.JobSpec{Queue: QueueW, Kind: "k", UniqueKey: "u2"})

	// Within one batch the second spec is a duplicate of the first.
	res, err := h.Client.EnqueueBatch(ctx, []queue.JobSpec{
		{Queue: QueueB, Kind: "k", UniqueKey: "u3"}, {Queue: QueueB, Kind: "k", UniqueKey: "u3"}, {Queue: QueueB, Kind: "k"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Duplicate || !res[1].Duplicate || res[1].Job.ID != res[0].Job.ID || res[2].Duplicate {
		t.Fatalf("batch duplicates = %v %v %v, want false true false with the first job", res[0].Duplicate, res[1].Duplicate, res[2].Duplicate)
	}
}
