package queuetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

func testRetries(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	j := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", MaxAttempts: 3})
	for attempt := 1; attempt <= 3; attempt++ {
		l := h.leaseOne(t, QueueQ)
		if l.Job.Attempt != attempt {
			t.Fatalf("attempt %d: leased Attempt = %d", attempt, l.Job.Attempt)
		}
		st, err := h.Backend.Fail(ctx, j.ID, l.Token, backend.Failure{Error: fmt.Sprintf("boom %d", attempt), RetryIn: time.Minute})
		if err != nil {
			t.Fatalf("Fail: %v", err)
		}
		want := queue.StateRetrying
		if attempt == 3 {
			want = queue.StateFailed
		}
		if st != want {
			t.Fatalf("attempt %d: Fail = %s, want %s", attempt, st, want)
		}
		got := h.wantState(t, j.ID, want)
		if got.LastError != fmt.Sprintf("boom %d", attempt) || !got.LeaseUntil.IsZero() {
			t.Fatalf("attempt %d: LastError %q lease %v", attempt, got.LastError, got.LeaseUntil)
		}
		if want == queue.StateRetrying {
			if !sameTime(got.RunAt, h.Clock.Now().Add(time.Minute)) {
				t.Fatalf("retry RunAt = %v, want now+1m", got.RunAt)
			}
			if n := len(h.lease(t, 1, QueueQ)); n != 0 {
				t.Fatalf("leased a retrying job before its backoff ended")
			}
			h.Clock.Advance(time.Minute)
		}
	}
	final := h.get(t, j.ID)
	if len(final.Errors) != 3 || !sameTime(final.FinishedAt, h.Clock.Now()) {
		t.Fatalf("final job: %d errors, finished %v", len(final.Errors), final.FinishedAt)
	}
	for i, e := range final.Errors {
		if e.Attempt != i+1 || e.Error != fmt.Sprintf("boom %d", i+1) || e.At.IsZero() {
			t.Errorf("Errors[%d] = %+v, want attempt %d boom %d", i, e, i+1, i+1)
		}
	}

	// Permanent fails at once; history is bounded.
	p := h.enqueue(t, queue.JobSpec{Queue: QueueP, Kind: "k", MaxAttempts: 100})
	for i := 0; i < queue.MaxErrorHistory+5; i++ {
		l := h.leaseOne(t, QueueP)
		if _, err := h.Backend.Fail(ctx, p.ID, l.Token, backend.Failure{Error: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	got := h.get(t, p.ID)
	if len(got.Errors) != queue.MaxErrorHistory || got.Errors[len(got.Errors)-1].Error != fmt.Sprint(queue.MaxErrorHistory+4) {
		t.Fatalf("history: %d entries, last %+v; want %d, newest kept", len(got.Errors), got.Errors[len(got.Errors)-1], queue.MaxErrorHistory)
	}
	l := h.leaseOne(t, QueueP)
	if st, err := h.Backend.Fail(ctx, p.ID, l.Token, backend.Failure{Error: "bad input", Permanent: true}); err != nil || st != queue.StateFailed {
		t.Fatalf("permanent Fail = %s, %v; want failed", st, err)
	}
}

func testCancel(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	pending := h.enqueue(t, spec(QueueQ, "k"))
	sched := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", RunAt: Epoch.Add(time.Hour)})
	for _, j := range []*queue.Job{pending, sched} {
		got, err := h.Client.Cancel(ctx, j.ID)
		if err != nil || got.State != queue.StateCancelled || got.FinishedAt.IsZero() {
			t.Fatalf("Cancel(%s) = %+v, %v; want cancelled", j.State, got, err)
		}
		// Idempotent.
		if again, err := h.Client.Cancel(ctx, j.ID); err != nil || again.State != queue.StateCancelled {
			t.Fatalf("second Cancel = %v, %v", again, err)
		}
	}
	h.Clock.Advance(2 * time.Hour)
	if got := h.lease(t, 10, QueueQ); len(got) != 0 {
		t.Fatalf("leased cancelled jobs %v", ids(got))
	}
	if _, err := h.Client.Cancel(ctx, "no-such-job"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("Cancel(missing) = %v, want ErrNotFound", err)
	}

	// Running: the holder learns of it on Extend; failing then cancels.
	run := h.enqueue(t, spec(QueueR, "k"))
	l := h.leaseOne(t, QueueR)
	got, err := h.Client.Cancel(ctx, run.ID)
	if err != nil || got.State != queue.StateActive || !got.CancelRequested {
		t.Fatalf("Cancel(active) = %+v, %v; want active with CancelRequested", got, err)
	}
	st, err := h.Backend.Extend(ctx, run.ID, l.Token, testLease)
	if err != nil || !st.CancelRequested {
		t.Fatalf("Extend after cancel = %+v, %v; want CancelRequested", st, err)
	}
	if s, err := h.Backend.Fail(ctx, run.ID, l.Token, backend.Failure{Error: "context canceled"}); err != nil || s != queue.StateCancelled {
		t.Fatalf("Fail after cancel = %s, %v; want cancelled", s, err)
	}
	// Requeue and Snooze of a cancelled job end it too.
	for _, op := range []string{"requeue", "snooze"} {
		j := h.enqueue(t, spec(QueueS, op))
		l := h.leaseOne(t, QueueS)
		if _, err := h.Client.Cancel(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
		var s queue.State
		if op == "requeue" {
			s, err = h.Backend.Requeue(ctx, j.ID, l.Token)
		} else {
			s, err = h.Backend.Snooze(ctx, j.ID, l.Token, time.Second)
		}
		if err != nil || s != queue.StateCancelled {
			t.Fatalf("%s after cancel = %s, %v; want cancelled", op, s, err)
		}
	}
	// Completing anyway completes; cancelling a finished job says so.
	done := h.enqueue(t, spec(QueueD, "k"))
	l = h.leaseOne(t, QueueD)
	if _, err := h.Client.Cancel(ctx, done.ID); err != nil {
		t.Fatal(err)
	}
	if err := h.Backend.Complete(ctx, done.ID, l.Token, []byte("ok")); err != nil {
		t.Fatalf("Complete after cancel request: %v", err)
	}
	j, err := h.Client.Cancel(ctx, done.ID)
	if !errors.Is(err, queue.ErrJobFinished) || j == nil || j.State != queue.StateCompleted {
		t.Fatalf("Cancel(completed) = %v, %v; want the job and ErrJobFinished", j, err)
	}
}

func testStalls(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	rescue := func(max int) backend.RescueResult {
		t.Helper()
		r, err := h.Backend.RescueExpired(ctx, backend.RescueRequest{MaxStalls: max})
		if err != nil {
			t.Fatalf("RescueExpired: %v", err)
		}
		return r
	}
	j := h.enqueue(t, spec(QueueQ, "k"))
	h.leaseOne(t, QueueQ)
	// Not expired yet: nothing happens, at or before the deadline.
	h.Clock.Advance(testLease)
	if r := rescue(3); r.Total() != 0 {
		t.Fatalf("rescue at the deadline = %+v, want nothing", r)
	}
	for stall := 1; stall <= 3; stall++ {
		h.Clock.Advance(time.Millisecond)
		r := rescue(3)
		if again := rescue(3); again.Total() != 0 {
			t.Fatalf("second rescue = %+v, want nothing (idempotent)", again)
		}
		got := h.get(t, j.ID)
		if got.Stalls != stall || got.Attempt != 0 || !got.LeaseUntil.IsZero() || got.WorkerID != "" {
			t.Fatalf("after stall %d: stalls %d attempt %d lease %v worker %q", stall, got.Stalls, got.Attempt, got.LeaseUntil, got.WorkerID)
		}
		if stall < 3 {
			if r.Requeued != 1 || got.State != queue.StatePending {
				t.Fatalf("stall %d: rescue %+v, state %s; want requeued, pending", stall, r, got.State)
			}
			h.leaseOne(t, QueueQ)
			h.Clock.Advance(testLease)
			continue
		}
		if r.Failed != 1 || got.State != queue.StateFailed || !strings.Contains(got.LastError, "stalled 3 times") || len(got.Errors) != 1 {
			t.Fatalf("max stalls: rescue %+v, state %s, LastError %q, %d errors", r, got.State, got.LastError, len(got.Errors))
		}
	}
	// Cancelled while running, then abandoned: cancelled.
	c := h.enqueue(t, spec(QueueC, "k"))
	h.leaseOne(t, QueueC)
	if _, err := h.Client.Cancel(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	h.Clock.Advance(testLease + time.Second)
	if r := rescue(0); r.Cancelled != 1 {
		t.Fatalf("rescue of a cancelled job = %+v, want 1 cancelled", r)
	}
	h.wantState(t, c.ID, queue.StateCancelled)
	// Bounded per call; limited to the given queues.
	for i := 0; i < 5; i++ {
		h.enqueue(t, spec(QueueB, "k"))
	}
	h.lease(t, 5, QueueB)
	h.Clock.Advance(testLease + time.Second)
	if r, _ := h.Backend.RescueExpired(ctx, backend.RescueRequest{Queues: []string{QueueOther}}); r.Total() != 0 {
		t.Fatalf("rescue of another queue = %+v, want nothing", r)
	}
	if r, _ := h.Backend.RescueExpired(ctx, backend.RescueRequest{Queues: []string{QueueB}, Limit: 2}); r.Requeued != 2 {
		t.Fatalf("rescue with Limit 2 = %+v, want 2 requeued", r)
	}
	if r := rescue(0); r.Requeued != 3 {
		t.Fatalf("rescue of the rest = %+v, want 3 requeued", r)
	}
}

func testRetention(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	finish := func(q string, how queue.State) *queue.Job {
		j := h.enqueue(t, spec(q, "k"))
		switch how {
		case queue.StateCancelled:
			if _, err := h.Client.Cancel(ctx, j.ID); err != nil {
				t.Fatal(err)
			}
		case queue.StateCompleted:
			l := h.leaseOne(t, q)
			if err := h.Backend.Complete(ctx, j.ID, l.Token, nil); err != nil {
				t.Fatal(err)
			}
		case queue.StateFailed:
			l := h.leaseOne(t, q)
			if _, err := h.Backend.Fail(ctx, j.ID, l.Token, backend.Failure{Error: "x", Permanent: true}); err != nil {
				t.Fatal(err)
			}
		}
		return j
	}
	done := finish(QueueQ, queue.StateCompleted)
	failed := finish(QueueQ, queue.StateFailed)
	cancelled := finish(QueueQ, queue.StateCancelled)
	live := h.enqueue(t, spec(QueueQ, "k"))
	ret := queue.Retention{}.WithDefaults()
	cleanup := func(r queue.Retention, limit int) int {
		t.Helper()
		n, err := h.Backend.Cleanup(ctx, backend.CleanupRequest{Retention: r, Limit: limit})
		if err != nil {
			t.Fatalf("Cleanup: %v", err)
		}
		return n
	}
	exists := func(id string) bool {
		_, err := h.Backend.Get(ctx, id)
		return !errors.Is(err, queue.ErrNotFound)
	}
	h.Clock.Advance(24*time.Hour - time.Second)
	if n := cleanup(ret, 0); n != 0 {
		t.Fatalf("cleanup before 24h deleted %d", n)
	}
	h.Clock.Advance(time.Second)
	if n := cleanup(ret, 0); n != 2 || exists(done.ID) || exists(cancelled.ID) || !exists(failed.ID) || !exists(live.ID) {
		t.Fatalf("cleanup at 24h deleted %d; completed %v cancelled %v failed %v live %v",
			n, exists(done.ID), exists(cancelled.ID), exists(failed.ID), exists(live.ID))
	}
	h.Clock.Advance(6 * 24 * time.Hour)
	keepFailed := ret
	keepFailed.Failed = -1
	if n := cleanup(keepFailed, 0); n != 0 || !exists(failed.ID) {
		t.Fatalf("negative retention deleted %d", n)
	}
	if n := cleanup(ret, 0); n != 1 || exists(failed.ID) || !exists(live.ID) {
		t.Fatalf("cleanup at 7d deleted %d, failed still there: %v", n, exists(failed.ID))
	}
	// Bounded per call; limited to the given limit.
	for i := 0; i < 5; i++ {
		finish(QueueB, queue.StateCancelled)
	}
	if n := cleanup(queue.Retention{Completed: -1, Failed: -1}, 2); n != 2 {
		t.Fatalf("cleanup with Limit 2 deleted %d", n)
	}
	if n := cleanup(queue.Retention{Completed: -1, Failed: -1}, 0); n != 3 {
		t.Fatalf("cleanup of the rest deleted %d", n)
	}
}

func testListStats(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	var all []string
	for i := 0; i < 7; i++ {
		all = append(all, h.enqueue(t, spec(QueueA, "k")).ID)
	}
	b1 := h.enqueue(t, spec(QueueB, "k"))
	h.enqueue(t, queue.JobSpec{Queue: QueueB, Kind: "k", RunAt: Epoch.Add(time.Hour)})
	h.lease(t, 2, QueueA)
	// Paging through queue a, three at a time.
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		p, err := h.Client.List(ctx, queue.ListFilter{Queue: QueueA, Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		for _, j := range p.Jobs {
			got = append(got, j.ID)
		}
		if p.Next == "" {
			break
		}
		if pages > 5 {
			t.Fatal("List never ends")
		}
		cursor = p.Next
	}
	if !slices.Equal(got, all) {
		t.Fatalf("paged List(a) = %v, want %v", got, all)
	}
	p, err := h.Client.List(ctx, queue.ListFilter{States: []queue.State{queue.StateActive}})
	if err != nil || len(p.Jobs) != 2 || p.Jobs[0].ID != all[0] || p.Jobs[1].ID != all[1] {
		t.Fatalf("List(active) = %+v, %v; want the first two jobs", p, err)
	}
	p, err = h.Client.List(ctx, queue.ListFilter{Queue: QueueB, States: []queue.State{queue.StatePending, queue.StateScheduled}})
	if err != nil || len(p.Jobs) != 2 || p.Jobs[0].ID != b1.ID {
		t.Fatalf("List(b, pending|scheduled) = %+v, %v", p, err)
	}
	if _, err := h.Client.List(ctx, queue.ListFilter{States: []queue.State{"bogus"}}); !errors.Is(err, queue.ErrInvalidArgument) {
		t.Fatalf("List(bogus state) error = %v", err)
	}
	st, err := h.Client.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 2 || st[0].Queue != QueueA || st[1].Queue != QueueB {
		t.Fatalf("Stats queues = %+v, want a, b", st)
	}
	wants := []struct {
		q    string
		s    queue.State
		want int64
	}{
		{QueueA, queue.StatePending, 5}, {QueueA, queue.StateActive, 2},
		{QueueB, queue.StatePending, 1}, {QueueB, queue.StateScheduled, 1}, {QueueB, queue.StateActive, 0},
	}
	for _, w := range wants {
		if got := count(st, w.q, w.s); got != w.want {
			t.Errorf("Stats[%s][%s] = %d, want %d", w.q, w.s, got, w.want)
		}
	}
}
