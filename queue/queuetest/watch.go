package queuetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// RunWatch runs the suite of progress, the event log, Client.Wait and
// Client.Subscribe against backends made by f, which must open them with
// their event log on where they have one (such as
// sqlitequeue.Options.Events). Each test skips, naming what is missing,
// on a backend without the part it checks.
func RunWatch(t *testing.T, f Factory) {
	runTests(t, f, []test{
		{"Progress", needs(queue.CapProgress), testProgress},
		{"EventLog", needs(queue.CapEvents), testEventLog},
		{"WaitShared", needs(queue.CapEvents), testWaitShared},
		{"WaitGroup", needs(queue.CapEvents, queue.CapGroups), testWaitGroup},
		{"SubscribeResume", needs(queue.CapEvents), testSubscribeResume},
		{"SubscribeSlow", needs(queue.CapEvents), testSubscribeSlow},
	})
}

// testProgress: SetProgress is fenced by the lease and its report outlives
// the job's end.
func testProgress(t *testing.T, f Factory) {
	h := NewHarness(t, f)
	ctx := context.Background()
	pb := h.Backend.Features().Progress
	j := h.enqueue(t, spec("q", "k"))
	first := h.leaseOne(t, "q")
	p := queue.Percent(42).WithData(map[string]int{"pages": 7})
	if err := pb.SetProgress(ctx, j.ID, first.Token, p); err != nil {
		t.Fatalf("SetProgress: %v", err)
	}
	got := h.get(t, j.ID).Progress
	if got == nil || got.Percent == nil || *got.Percent != 42 || string(got.Data) != `{"pages":7}` {
		t.Fatalf("Progress = %+v, want 42%% and {\"pages\":7}", got)
	}
	if !got.UpdatedAt.Equal(h.Clock.Now()) && got.UpdatedAt.Sub(h.Clock.Now()).Abs() > time.Millisecond {
		t.Errorf("Progress.UpdatedAt = %v, want the backend's now %v", got.UpdatedAt, h.Clock.Now())
	}
	wantErr(t, "SetProgress with a wrong token", pb.SetProgress(ctx, j.ID, first.Token+"x", queue.Percent(50)), queue.ErrLeaseLost)
	wantErr(t, "SetProgress of an unknown job", pb.SetProgress(ctx, unknownID(h, j.ID), first.Token, queue.Percent(50)), queue.ErrNotFound)

	// A stale holder: the lease is given back and the job leased again.
	if _, err := h.Backend.Requeue(ctx, j.ID, first.Token); err != nil {
		t.Fatal(err)
	}
	second := h.leaseOne(t, "q")
	wantErr(t, "SetProgress by the stale holder", pb.SetProgress(ctx, j.ID, first.Token, queue.Percent(99)), queue.ErrLeaseLost)
	if err := pb.SetProgress(ctx, j.ID, second.Token, queue.Percent(100)); err != nil {
		t.Fatalf("SetProgress by the holder: %v", err)
	}
	if err := h.Backend.Complete(ctx, j.ID, second.Token, nil); err != nil {
		t.Fatal(err)
	}
	got = h.get(t, j.ID).Progress
	if got == nil || got.Percent == nil || *got.Percent != 100 || len(got.Data) != 0 {
		t.Fatalf("after Complete: Progress = %+v, want 100%% without data", got)
	}
	wantErr(t, "SetProgress after Complete", pb.SetProgress(ctx, j.ID, second.Token, queue.Percent(1)), queue.ErrLeaseLost)
}

// unknownID returns an id of the backend's form that names no job.
func unknownID(h *Harness, known string) string {
	j, err := h.Client.Enqueue(context.Background(), spec("other", "k"))
	if err != nil {
		return known + "0"
	}
	_, _ = h.Backend.Cancel(context.Background(), j.ID)
	_, _ = h.Backend.Cleanup(context.Background(), backend.CleanupRequest{Queues: []string{"other"}})
	return j.ID
}

// logOf returns b's event log.
func logOf(h *Harness) backend.EventLog { return h.Backend.Features().Events }

// readAll reads every event after cursor.
func readAll(t *testing.T, log backend.EventLog, after string) []queue.Event {
	t.Helper()
	var out []queue.Event
	for {
		b, err := log.ReadEvents(context.Background(), after, 3, 0)
		if err != nil {
			t.Fatalf("ReadEvents(%q): %v", after, err)
		}
		if len(b.Events) == 0 {
			return out
		}
		out = append(out, b.Events...)
		after = b.Events[len(b.Events)-1].ID
	}
}

func types(es []queue.Event) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = string(e.Type) + " " + e.JobID
	}
	return out
}

// testEventLog: every transition the log records is there, in order, with
// the job's fields, and reading from any cursor returns what follows it.
func testEventLog(t *testing.T, f Factory) {
	h := NewHarness(t, f)
	ctx := context.Background()
	log := logOf(h)
	start, err := log.LastEventID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a := h.enqueue(t, queue.JobSpec{Queue: "q", Kind: "ka", Tenant: "t1"})
	b := h.enqueue(t, spec("q", "kb"))
	la := h.leaseOne(t, "q")
	if err := h.Backend.Features().Progress.SetProgress(ctx, a.ID, la.Token, queue.Percent(10)); err != nil {
		t.Fatal(err)
	}
	if err := h.Backend.Complete(ctx, a.ID, la.Token, nil); err != nil {
		t.Fatal(err)
	}
	lb := h.leaseOne(t, "q")
	if _, err := h.Backend.Fail(ctx, b.ID, lb.Token, backend.Failure{Error: "boom", Permanent: true}); err != nil {
		t.Fatal(err)
	}
	c := h.enqueue(t, spec("q", "kc"))
	if _, err := h.Backend.Cancel(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, log, start)
	want := []string{
		"job.enqueued " + a.ID, "job.enqueued " + b.ID, "job.started " + a.ID, "job.progress " + a.ID,
		"job.completed " + a.ID, "job.started " + b.ID, "job.failed " + b.ID, "job.enqueued " + c.ID,
		"job.cancelled " + c.ID,
	}
	if g := types(got); !equalStrings(g, want) {
		t.Fatalf("events:\n got %q\nwant %q", g, want)
	}
	if e := got[0]; e.Queue != "q" || e.Kind != "ka" || e.Tenant != "t1" {
		t.Errorf("enqueued event = %+v, want queue q, kind ka, tenant t1", e)
	}
	if e := got[6]; e.Error != "boom" || e.State != queue.StateFailed {
		t.Errorf("failed event = %+v, want error boom, state failed", e)
	}
	if e := got[3]; len(e.Data) == 0 {
		t.Errorf("progress event has no data: %+v", e)
	}
	for i := range got {
		if rest := readAll(t, log, got[i].ID); !equalStrings(types(rest), want[i+1:]) {
			t.Fatalf("after event %d: got %q, want %q", i, types(rest), want[i+1:])
		}
	}
	last, err := log.LastEventID(ctx)
	if err != nil || last != got[len(got)-1].ID {
		t.Fatalf("LastEventID = %q, %v; want %q", last, err, got[len(got)-1].ID)
	}
	h.Clock.Advance(time.Hour)
	n, err := log.PruneEvents(ctx, time.Minute, 0, 0)
	if err != nil || n != len(got) {
		t.Fatalf("PruneEvents = %d, %v; want %d", n, err, len(got))
	}
	if rest := readAll(t, log, start); len(rest) != 0 {
		t.Fatalf("after PruneEvents: %q left", types(rest))
	}
}

// countingBackend counts Get calls.
type countingBackend struct {
	backend.Backend
	gets atomic.Int64
}

func (c *countingBackend) Get(ctx context.Context, id string) (*queue.Job, error) {
	c.gets.Add(1)
	return c.Backend.Get(ctx, id)
}

// testWaitShared: many callers waiting on one job cost one store read each
// to start and one read in all when the job ends, not a read per caller
// per poll; unrelated events read no job.
func testWaitShared(t *testing.T, f Factory) {
	h := NewHarness(t, f)
	ctx := context.Background()
	cb := &countingBackend{Backend: h.Backend}
	client := queue.NewClient(cb)
	j := h.enqueue(t, spec("q", "k"))
	const waiters = 25
	var wg sync.WaitGroup
	results := make(chan *queue.Job, waiters)
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := client.Wait(ctx, j.ID)
			if err != nil {
				t.Errorf("Wait: %v", err)
			}
			results <- got
		}()
	}
	testutil.Eventually(t, "every waiter read the job once", func() bool { return cb.gets.Load() == waiters })
	// Events about other jobs wake the watcher but read no job.
	other := h.enqueue(t, spec("other", "k"))
	lo := h.leaseOne(t, "other")
	if err := h.Backend.Complete(ctx, other.ID, lo.Token, nil); err != nil {
		t.Fatal(err)
	}
	l := h.leaseOne(t, "q")
	if err := h.Backend.Complete(ctx, j.ID, l.Token, []byte(`"done"`)); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(results)
	for got := range results {
		if got == nil || got.State != queue.StateCompleted {
			t.Fatalf("Wait returned %+v, want the completed job", got)
		}
	}
	if n := cb.gets.Load(); n != waiters+1 {
		t.Errorf("store reads = %d, want %d (one per waiter to start, one for the completion)", n, waiters+1)
	}

	// A deadline returns the job as it is, with the context's error.
	k := h.enqueue(t, spec("q", "k"))
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	got, err := client.Wait(dctx, k.ID)
	if !errors.Is(err, context.DeadlineExceeded) || got == nil || got.State != queue.StatePending {
		t.Errorf("Wait past its deadline = %+v, %v; want the pending job and DeadlineExceeded", got, err)
	}
	if _, err := client.Wait(ctx, unknownID(h, k.ID)); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("Wait on an unknown job: %v, want ErrNotFound", err)
	}
}

// testWaitGroup: WaitGroup returns once the group's last job ends.
func testWaitGroup(t *testing.T, f Factory) {
	h := NewHarness(t, f)
	ctx := context.Background()
	if _, err := h.Client.CreateGroup(ctx, queue.GroupSpec{ID: "g1"}); err != nil {
		t.Fatal(err)
	}
	a := h.enqueue(t, queue.JobSpec{Queue: "q", Kind: "k", Group: "g1"})
	done := make(chan *queue.GroupProgress, 1)
	go func() {
		g, err := h.Client.WaitGroup(ctx, "g1")
		if err != nil {
			t.Errorf("WaitGroup: %v", err)
		}
		done <- g
	}()
	l := h.leaseOne(t, "q")
	if err := h.Backend.Complete(ctx, a.ID, l.Token, nil); err != nil {
		t.Fatal(err)
	}
	if g := <-done; g == nil || !g.Done || g.Completed != 1 {
		t.Fatalf("WaitGroup = %+v, want the done group with 1 completed", g)
	}
}

// testSubscribeResume: a subscriber that goes away and comes back with the
// last id it saw receives every event it missed, in order, then live ones.
func testSubscribeResume(t *testing.T, f Factory) {
	h := NewHarness(t, f)
	ctx := context.Background()
	sub, err := h.Client.Subscribe(ctx, queue.EventFilter{Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	a := h.enqueue(t, spec("q", "k"))
	h.enqueue(t, spec("skip", "k")) // filtered out
	first := next(t, sub)
	if first.Type != queue.EventJobEnqueued || first.JobID != a.ID {
		t.Fatalf("first event = %+v, want job.enqueued of %s", first, a.ID)
	}
	sub.Close()
	if sub.Err() == nil {
		t.Errorf("Err after Close = nil, want the context's error")
	}
	// Missed while away.
	b := h.enqueue(t, spec("q", "k"))
	l := h.leaseOne(t, "q")
	if err := h.Backend.Complete(ctx, l.Job.ID, l.Token, nil); err != nil {
		t.Fatal(err)
	}
	sub, err = h.Client.Subscribe(ctx, queue.EventFilter{Queue: "q", After: first.ID})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	c := h.enqueue(t, spec("q", "k")) // live
	want := []string{"job.enqueued " + b.ID, "job.started " + a.ID, "job.completed " + a.ID, "job.enqueued " + c.ID}
	var got []queue.Event
	for range want {
		got = append(got, next(t, sub))
	}
	if !equalStrings(types(got), want) {
		t.Fatalf("after resuming: got %q, want %q", types(got), want)
	}
}

// testSubscribeSlow: a subscriber that does not read is cut off once its
// buffer is full, not left to grow.
func testSubscribeSlow(t *testing.T, f Factory) {
	h := NewHarness(t, f)
	sub, err := h.Client.Subscribe(context.Background(), queue.EventFilter{Buffer: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for range 6 {
		h.enqueue(t, spec("q", "k"))
	}
	testutil.Eventually(t, "the slow subscriber is cut off", func() bool {
		return errors.Is(sub.Err(), queue.ErrSlowSubscriber)
	})
}

// next returns the subscription's next event, failing after a generous
// deadline.
func next(t *testing.T, sub *queue.Subscription) queue.Event {
	t.Helper()
	select {
	case e, ok := <-sub.Events():
		if !ok {
			t.Fatalf("subscription ended: %v", sub.Err())
		}
		return e
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30s")
	}
	return queue.Event{}
}
