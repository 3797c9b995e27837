package queuetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// RunRetry checks backend.Retrier: what a retried job keeps and loses, the
// states and jobs it refuses, unique keys, and the tenant scheduler's hold
// on a retried job. Run calls it; each test is skipped on a backend
// without the capabilities it declares.
func RunRetry(t *testing.T, f Factory) {
	runTests(t, f, []test{
		{"Failed", needs(queue.CapRetry), testRetryFailed},
		{"Cancelled", needs(queue.CapRetry, queue.CapCancelPending, queue.CapDelay), testRetryCancelled},
		{"Refused", needs(queue.CapRetry, queue.CapDelay), testRetryRefused},
		{"Group", needs(queue.CapRetry, queue.CapGroups), testRetryGroup},
		{"Unique", needs(queue.CapRetry, queue.CapUnique, queue.CapCancelPending), testRetryUnique},
		{"Tenant", needs(queue.CapRetry, queue.CapTenants), testRetryTenant},
		{"NeverReady", needs(queue.CapRetry, queue.CapCancelPending, queue.CapDelay), testRetryNeverReady},
	})
}

// failForGood leases the only ready job of queue q and fails it
// permanently with msg.
func (h *Harness) failForGood(t *testing.T, q, msg string) *queue.Job {
	t.Helper()
	l := h.leaseOne(t, q)
	st, err := h.Backend.Fail(context.Background(), l.Job.ID, l.Token, backend.Failure{Error: msg, Permanent: true})
	if err != nil || st != queue.StateFailed {
		t.Fatalf("Fail(permanent) = %s, %v; want failed", st, err)
	}
	return h.get(t, l.Job.ID)
}

func testRetryFailed(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	j := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", MaxAttempts: 2})
	// First attempt fails and is retried by backoff; the second is the last.
	l := h.leaseOne(t, QueueQ)
	if _, err := h.Backend.Fail(ctx, j.ID, l.Token, backend.Failure{Error: "boom 1"}); err != nil {
		t.Fatal(err)
	}
	h.Clock.Advance(time.Second)
	l = h.leaseOne(t, QueueQ)
	if st, err := h.Backend.Fail(ctx, j.ID, l.Token, backend.Failure{Error: "boom 2"}); err != nil || st != queue.StateFailed {
		t.Fatalf("last Fail = %s, %v; want failed", st, err)
	}
	h.Clock.Advance(time.Minute)
	got, err := h.Client.Retry(ctx, j.ID)
	if err != nil {
		t.Fatalf("Retry(failed): %v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"ID", got.ID, j.ID},
		{"State", got.State, queue.StatePending},
		{"Attempt", got.Attempt, 0},
		{"Stalls", got.Stalls, 0},
		{"LastError", got.LastError, "boom 2"},
		{"len(Errors)", len(got.Errors), 2},
		{"Result", len(got.Result), 0},
		{"CancelRequested", got.CancelRequested, false},
		{"WorkerID", got.WorkerID, ""},
		{"LeaseUntil zero", got.LeaseUntil.IsZero(), true},
		{"FinishedAt zero", got.FinishedAt.IsZero(), true},
		{"UpdatedAt is now", sameTime(got.UpdatedAt, h.Clock.Now()), true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("after Retry, %s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if stored := h.wantState(t, j.ID, queue.StatePending); len(stored.Errors) != 2 || stored.Errors[0].Error != "boom 1" {
		t.Errorf("stored Errors = %+v, want the two earlier attempts", stored.Errors)
	}
	st, err := h.Backend.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if f, p := count(st, QueueQ, queue.StateFailed), count(st, QueueQ, queue.StatePending); f != 0 || p != 1 {
		t.Errorf("Stats: failed %d, pending %d; want 0 and 1", f, p)
	}
	// It runs again with a full set of attempts.
	l = h.leaseOne(t, QueueQ)
	if l.Job.ID != j.ID || l.Job.Attempt != 1 {
		t.Fatalf("leased %s attempt %d, want %s attempt 1", l.Job.ID, l.Job.Attempt, j.ID)
	}
	if err := h.Backend.Complete(ctx, j.ID, l.Token, []byte(`"ok"`)); err != nil {
		t.Fatal(err)
	}
	h.wantState(t, j.ID, queue.StateCompleted)
}

func testRetryCancelled(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	// A job cancelled before it was ever ready, and one cancelled while
	// pending, both come back pending and run.
	sched := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", RunAt: Epoch.Add(time.Hour)})
	pending := h.enqueue(t, spec(QueueQ, "k"))
	for _, j := range []*queue.Job{sched, pending} {
		if _, err := h.Client.Cancel(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
		got, err := h.Client.Retry(ctx, j.ID)
		if err != nil || got.State != queue.StatePending || !got.FinishedAt.IsZero() {
			t.Fatalf("Retry(cancelled %s) = %+v, %v; want pending", j.ID, got, err)
		}
	}
	if got := h.lease(t, 10, QueueQ); len(got) != 2 {
		t.Fatalf("leased %v, want both retried jobs", ids(got))
	}
}

func testRetryRefused(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	done := h.enqueue(t, spec(QueueC, "k"))
	l := h.leaseOne(t, QueueC)
	if err := h.Backend.Complete(ctx, done.ID, l.Token, nil); err != nil {
		t.Fatal(err)
	}
	active := h.enqueue(t, spec(QueueA, "k"))
	h.leaseOne(t, QueueA)
	cases := []struct {
		name string
		id   string
		want queue.State
	}{
		{"pending", h.enqueue(t, spec(QueueP, "k")).ID, queue.StatePending},
		{"scheduled", h.enqueue(t, queue.JobSpec{Queue: QueueS, Kind: "k", RunAt: Epoch.Add(time.Hour)}).ID, queue.StateScheduled},
		{"active", active.ID, queue.StateActive},
		{"completed", done.ID, queue.StateCompleted},
	}
	for _, c := range cases {
		_, err := h.Client.Retry(ctx, c.id)
		var nr *queue.NotRetryableError
		if !errors.Is(err, queue.ErrNotRetryable) || !errors.As(err, &nr) || nr.State != c.want || nr.ID != c.id {
			t.Errorf("Retry(%s) = %v, want a NotRetryableError naming state %s", c.name, err, c.want)
		}
		h.wantState(t, c.id, c.want)
	}
	if _, err := h.Client.Retry(ctx, "no-such-job"); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("Retry(unknown) = %v, want ErrNotFound", err)
	}
	if _, err := h.Client.Retry(ctx, ""); !errors.Is(err, queue.ErrInvalidArgument) {
		t.Errorf("Retry(\"\") = %v, want ErrInvalidArgument", err)
	}
}

func testRetryGroup(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Group: "crawl"})
	j := h.failForGood(t, QueueQ, "boom")
	_, err := h.Client.Retry(ctx, j.ID)
	var nr *queue.NotRetryableError
	if !errors.As(err, &nr) || nr.Group != "crawl" || nr.State != queue.StateFailed {
		t.Fatalf("Retry(group job) = %v, want a NotRetryableError naming group crawl", err)
	}
	h.wantState(t, j.ID, queue.StateFailed)
}

func testRetryUnique(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	key := queue.JobSpec{Queue: QueueQ, Kind: "k", UniqueKey: "order-7"}
	h.enqueue(t, key)
	first := h.failForGood(t, QueueQ, "boom")
	// The key was freed when the job failed; a new job holds it now.
	second := h.enqueue(t, key)
	_, err := h.Client.Retry(ctx, first.ID)
	var de *queue.DuplicateError
	if !errors.Is(err, queue.ErrDuplicate) || !errors.As(err, &de) || de.Holder != second.ID || de.Key != "order-7" {
		t.Fatalf("Retry with the key held = %v, want a DuplicateError naming holder %s", err, second.ID)
	}
	h.wantState(t, first.ID, queue.StateFailed)
	// Once the holder is finished, the retried job takes the key back.
	if _, err := h.Client.Cancel(ctx, second.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Client.Retry(ctx, first.ID); err != nil {
		t.Fatalf("Retry with the key free: %v", err)
	}
	dup, err := h.Client.Enqueue(ctx, key)
	if !errors.Is(err, queue.ErrDuplicate) || dup.ID != first.ID {
		t.Fatalf("Enqueue(same key) after Retry = %v, %v; want a duplicate of %s", dup, err, first.ID)
	}

	// A key held for a window that has passed is not held again.
	win := queue.JobSpec{Queue: QueueW, Kind: "k", UniqueKey: "once", UniqueFor: time.Minute}
	h.enqueue(t, win)
	old := h.failForGood(t, QueueW, "boom")
	h.Clock.Advance(2 * time.Minute)
	if _, err := h.Client.Retry(ctx, old.ID); err != nil {
		t.Fatalf("Retry after the window: %v", err)
	}
	if _, err := h.Client.Enqueue(ctx, win); err != nil {
		t.Fatalf("Enqueue after the window = %v, want a new job", err)
	}
}

func testRetryTenant(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "acme"})
	failed := h.failForGood(t, QueueQ, "boom")
	if err := h.Client.SetTenantLimit(ctx, "acme", 1); err != nil {
		t.Fatal(err)
	}
	h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "acme"})
	running := h.leaseOne(t, QueueQ)
	// The tenant's one slot is taken: the retried job waits for it.
	got, err := h.Client.Retry(ctx, failed.ID)
	if err != nil || got.State != queue.StateWaiting {
		t.Fatalf("Retry with the tenant full = %+v, %v; want waiting", got, err)
	}
	if err := h.Backend.Complete(ctx, running.Job.ID, running.Token, nil); err != nil {
		t.Fatal(err)
	}
	l := h.leaseOne(t, QueueQ)
	if l.Job.ID != failed.ID {
		t.Fatalf("leased %s, want the retried job %s", l.Job.ID, failed.ID)
	}
}
