package queuetest

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// RunOutbox runs the outbox suite against backends made by f, which must
// open them with their event outbox on (such as sqlitequeue.Options.Outbox or
// redisqueue.Options.Outbox).
// It skips, saying why, when the backend does not implement backend.Outbox or
// its outbox is off. It checks the backend.Outbox contract (events written
// with their transitions, claims, fencing, the delivery log) and then runs
// queue/webhook's Dispatcher on the backend against httptest receivers.
func RunOutbox(t *testing.T, f Factory) {
	runTests(t, f, []test{
		{"Events", nil, testOutboxEvents},
		{"EventsOnRescue", nil, testOutboxRescue},
		{"Claims", nil, testOutboxClaims},
		{"Progress", nil, testOutboxProgress},
		{"DeliveryLog", nil, testOutboxLog},
		{"ConcurrentClaims", nil, testOutboxConcurrentClaims},
		{"WorkerAtomicity", nil, testOutboxWorker},
		{"GroupCompleted", needs(queue.CapGroups), testOutboxGroup},
		{"SchedulerEvents", needs(queue.CapTenants, queue.CapGroups), testOutboxScheduler},
		{"FlowCascade", needs(queue.CapFlows), testOutboxFlowCascade},
		{"Webhooks", nil, testWebhooks},
	})
}

// outboxHarness is a Harness whose backend has an outbox that is on.
type outboxHarness struct {
	*Harness
	Outbox backend.Outbox
}

func newOutboxHarness(t *testing.T, f Factory) *outboxHarness {
	t.Helper()
	h := NewHarness(t, f)
	ob := outboxOf(t, h.Backend)
	return &outboxHarness{Harness: h, Outbox: ob}
}

// outboxOf returns b's outbox, or skips the test.
func outboxOf(t *testing.T, b backend.Backend) backend.Outbox {
	t.Helper()
	f := b.Features()
	ob := f.Outbox
	if ob == nil {
		t.Skipf("%s has no outbox (Features.Outbox is nil)", f.Name)
	}
	if _, err := ob.ClaimEvents(context.Background(), 1, time.Second); err != nil {
		t.Fatalf("ClaimEvents on an empty outbox: %v", err)
	}
	return ob
}

// claimAll claims every due event (one-minute claims).
func (h *outboxHarness) claimAll(t *testing.T) []backend.ClaimedEvent {
	t.Helper()
	var out []backend.ClaimedEvent
	for {
		cs, err := h.Outbox.ClaimEvents(context.Background(), 100, time.Minute)
		if err != nil {
			t.Fatalf("ClaimEvents: %v", err)
		}
		out = append(out, cs...)
		if len(cs) < 100 {
			return out
		}
	}
}

// eventsByJob claims every due event and indexes them by job id, failing
// the test if a job has two.
func (h *outboxHarness) eventsByJob(t *testing.T) map[string]queue.Event {
	t.Helper()
	out := map[string]queue.Event{}
	for _, c := range h.claimAll(t) {
		if prev, dup := out[c.Event.JobID]; dup {
			t.Fatalf("job %s has two events: %s and %s", c.Event.JobID, prev.Type, c.Event.Type)
		}
		out[c.Event.JobID] = c.Event
	}
	return out
}

// testOutboxEvents drives every transition and checks that exactly the
// final ones recorded one event each, with the job's fields.
func testOutboxEvents(t *testing.T, f Factory) {
	t.Parallel()
	h := newOutboxHarness(t, f)
	ctx := context.Background()
	s := queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "acme", MaxAttempts: 2}
	done := h.enqueue(t, s)
	l := h.leaseOne(t, QueueQ)
	if err := h.Backend.Complete(ctx, done.ID, l.Token, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	// Failing twice: the first retry records nothing, the last failure does.
	failed := h.enqueue(t, s)
	for i := 0; i < 2; i++ {
		l = h.leaseOne(t, QueueQ)
		if _, err := h.Backend.Fail(ctx, failed.ID, l.Token, backend.Failure{Error: "boom"}); err != nil {
			t.Fatal(err)
		}
	}
	cancelled := h.enqueue(t, s)
	if _, err := h.Backend.Cancel(ctx, cancelled.ID); err != nil {
		t.Fatal(err)
	}
	// Cancelled while running, then given back: cancelled.
	running := h.enqueue(t, s)
	l = h.leaseOne(t, QueueQ)
	if _, err := h.Backend.Cancel(ctx, running.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Backend.Requeue(ctx, running.ID, l.Token); err != nil {
		t.Fatal(err)
	}
	// Snoozed, requeued, retried, leased, or fenced out: no event.
	quiet := h.enqueue(t, s)
	l = h.leaseOne(t, QueueQ)
	if _, err := h.Backend.Snooze(ctx, quiet.ID, l.Token, 0); err != nil {
		t.Fatal(err)
	}
	l = h.leaseOne(t, QueueQ)
	wantErr(t, "Complete with a wrong token", h.Backend.Complete(ctx, quiet.ID, l.Token+"x", nil), queue.ErrLeaseLost)
	if _, err := h.Backend.Requeue(ctx, quiet.ID, l.Token); err != nil {
		t.Fatal(err)
	}
	h.leaseOne(t, QueueQ)

	got := h.eventsByJob(t)
	want := map[string]queue.Event{
		done.ID:      {Type: queue.EventJobCompleted, State: queue.StateCompleted, Attempt: 1},
		failed.ID:    {Type: queue.EventJobFailed, State: queue.StateFailed, Attempt: 2, Error: "boom"},
		cancelled.ID: {Type: queue.EventJobCancelled, State: queue.StateCancelled},
		running.ID:   {Type: queue.EventJobCancelled, State: queue.StateCancelled},
	}
	if len(got) != len(want) {
		t.Fatalf("got events for %d jobs, want %d: %+v", len(got), len(want), got)
	}
	ids := map[string]bool{}
	for id, w := range want {
		e, ok := got[id]
		if !ok {
			t.Errorf("job %s has no event, want %s", id, w.Type)
			continue
		}
		if e.Type != w.Type || e.State != w.State || e.Attempt != w.Attempt || e.Error != w.Error {
			t.Errorf("job %s event = %s/%s attempt %d error %q, want %s/%s attempt %d error %q",
				id, e.Type, e.State, e.Attempt, e.Error, w.Type, w.State, w.Attempt, w.Error)
		}
		if e.Queue != QueueQ || e.Kind != "k" || e.Tenant != "acme" || !sameTime(e.Time, Epoch) || e.ID == "" || ids[e.ID] {
			t.Errorf("job %s event = %+v, want queue q, kind k, tenant acme, time %v and a fresh id", id, e, Epoch)
		}
		ids[e.ID] = true
	}
}

// testOutboxRescue checks the events of expired leases: failed after
// MaxStalls, cancelled when a cancel was requested, none when requeued.
func testOutboxRescue(t *testing.T, f Factory) {
	t.Parallel()
	h := newOutboxHarness(t, f)
	ctx := context.Background()
	stalled := h.enqueue(t, spec(QueueQ, "k"))
	h.leaseOne(t, QueueQ)
	cancelled := h.enqueue(t, spec(QueueQ, "k"))
	h.leaseOne(t, QueueQ)
	if _, err := h.Backend.Cancel(ctx, cancelled.ID); err != nil {
		t.Fatal(err)
	}
	h.Clock.Advance(testLease + time.Second)
	res, err := h.Backend.RescueExpired(ctx, backend.RescueRequest{MaxStalls: 1})
	if err != nil || res.Failed != 1 || res.Cancelled != 1 {
		t.Fatalf("RescueExpired = %+v, %v; want 1 failed, 1 cancelled", res, err)
	}
	requeued := h.enqueue(t, spec(QueueQ, "k"))
	h.leaseOne(t, QueueQ)
	h.Clock.Advance(testLease + time.Second)
	if res, err := h.Backend.RescueExpired(ctx, backend.RescueRequest{}); err != nil || res.Requeued != 1 {
		t.Fatalf("RescueExpired = %+v, %v; want 1 requeued", res, err)
	}
	got := h.eventsByJob(t)
	if e := got[stalled.ID]; e.Type != queue.EventJobFailed || e.Error == "" {
		t.Errorf("stalled job's event = %+v, want job.failed with the stall error", e)
	}
	if e := got[cancelled.ID]; e.Type != queue.EventJobCancelled {
		t.Errorf("cancelled job's event = %+v, want job.cancelled", e)
	}
	if e, ok := got[requeued.ID]; ok || len(got) != 2 {
		t.Errorf("requeued job has event %+v (events %d), want none", e, len(got))
	}
}

// testOutboxClaims checks claim exclusivity, expiry, fencing and retry
// delays on the backend's fake clock.
func testOutboxClaims(t *testing.T, f Factory) {
	t.Parallel()
	h := newOutboxHarness(t, f)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		h.completeOne(t)
	}
	first, err := h.Outbox.ClaimEvents(ctx, 2, time.Minute)
	if err != nil || len(first) != 2 {
		t.Fatalf("ClaimEvents(2) = %d events, %v; want 2", len(first), err)
	}
	rest := h.claimAll(t)
	if len(rest) != 1 || rest[0].Event.ID == first[0].Event.ID || rest[0].Event.ID == first[1].Event.ID {
		t.Fatalf("second claim = %d events, want the one left", len(rest))
	}
	if again := h.claimAll(t); len(again) != 0 {
		t.Fatalf("claimed %d events that are already claimed", len(again))
	}
	h.Clock.Advance(time.Minute + time.Second)
	expired := h.claimAll(t)
	if len(expired) != 3 {
		t.Fatalf("after the claims expired: claimed %d, want 3", len(expired))
	}
	wantErr(t, "AckEvent with an expired, reclaimed token",
		h.Outbox.AckEvent(ctx, first[0].Event.ID, first[0].Token), queue.ErrLeaseLost)
	wantErr(t, "RetryEvent with an expired, reclaimed token",
		h.Outbox.RetryEvent(ctx, first[0].Event.ID, first[0].Token, 0), queue.ErrLeaseLost)
	for _, c := range expired[:2] {
		if err := h.Outbox.AckEvent(ctx, c.Event.ID, c.Token); err != nil {
			t.Fatalf("AckEvent: %v", err)
		}
	}
	wantErr(t, "AckEvent twice", h.Outbox.AckEvent(ctx, expired[0].Event.ID, expired[0].Token), queue.ErrLeaseLost)
	if err := h.Outbox.RetryEvent(ctx, expired[2].Event.ID, expired[2].Token, 10*time.Second); err != nil {
		t.Fatalf("RetryEvent: %v", err)
	}
	if got := h.claimAll(t); len(got) != 0 {
		t.Fatalf("claimed %d events before the retry delay ended", len(got))
	}
	h.Clock.Advance(10 * time.Second)
	last := h.claimAll(t)
	if len(last) != 1 || last[0].Event.ID != expired[2].Event.ID {
		t.Fatalf("after the retry delay: %d events, want the retried one", len(last))
	}
	for _, c := range []struct{ max, lease int }{{0, 1}, {1, 0}} {
		_, err := h.Outbox.ClaimEvents(ctx, c.max, time.Duration(c.lease)*time.Second)
		wantErr(t, "ClaimEvents with a bad argument", err, queue.ErrInvalidArgument)
	}
}

// completeOne enqueues, leases and completes a job and returns its id.
func (h *outboxHarness) completeOne(t *testing.T) string {
	t.Helper()
	j := h.enqueue(t, spec(QueueQ, "k"))
	l := h.leaseOne(t, QueueQ)
	if err := h.Backend.Complete(context.Background(), j.ID, l.Token, nil); err != nil {
		t.Fatal(err)
	}
	return j.ID
}

// testOutboxProgress checks that recorded attempts show in later claims.
func testOutboxProgress(t *testing.T, f Factory) {
	t.Parallel()
	h := newOutboxHarness(t, f)
	ctx := context.Background()
	h.completeOne(t)
	c := h.claimAll(t)[0]
	if len(c.Progress) != 0 {
		t.Fatalf("fresh event progress = %v, want none", c.Progress)
	}
	record := func(sub string, attempt int, o backend.DeliveryOutcome) {
		d := backend.Delivery{EventID: c.Event.ID, EventType: c.Event.Type, JobID: c.Event.JobID,
			Subscription: sub, URL: "https://example.com/" + sub, Attempt: attempt, Status: 500, Outcome: o}
		if err := h.Outbox.RecordDelivery(ctx, d); err != nil {
			t.Fatalf("RecordDelivery: %v", err)
		}
	}
	record("a", 1, backend.DeliveryRetry)
	record("b", 1, backend.DeliveryOK)
	if err := h.Outbox.RetryEvent(ctx, c.Event.ID, c.Token, 0); err != nil {
		t.Fatal(err)
	}
	c = h.claimAll(t)[0]
	want := map[string]backend.Progress{"a": {Attempts: 1}, "b": {Attempts: 1, Final: true}}
	for sub, w := range want {
		if got := c.Progress[sub]; got != w {
			t.Errorf("progress[%s] = %+v, want %+v", sub, got, w)
		}
	}
	err := h.Outbox.RecordDelivery(ctx, backend.Delivery{EventID: c.Event.ID, Subscription: "a"})
	wantErr(t, "RecordDelivery without attempt and outcome", err, queue.ErrInvalidArgument)
	if err := h.Outbox.AckEvent(ctx, c.Event.ID, c.Token); err != nil {
		t.Fatal(err)
	}
	// A late attempt on an acknowledged event is still logged.
	record("a", 2, backend.DeliveryOK)
	p, err := h.Outbox.Deliveries(ctx, backend.DeliveryFilter{EventID: c.Event.ID})
	if err != nil || len(p.Deliveries) != 3 {
		t.Fatalf("Deliveries(event) = %v, %v; want 3 entries", p, err)
	}
}

// testOutboxLog checks the delivery log's filters, order, paging and
// pruning.
func testOutboxLog(t *testing.T, f Factory) {
	t.Parallel()
	h := newOutboxHarness(t, f)
	ctx := context.Background()
	add := func(job, sub string, attempt int) {
		d := backend.Delivery{EventID: "evt-" + job, EventType: queue.EventJobCompleted, JobID: job,
			Subscription: sub, URL: "https://example.com", Attempt: attempt, Status: 200,
			Latency: 3 * time.Millisecond, Outcome: backend.DeliveryOK}
		if err := h.Outbox.RecordDelivery(ctx, d); err != nil {
			t.Fatalf("RecordDelivery: %v", err)
		}
	}
	add("1", "a", 1)
	add("1", "b", 1)
	h.Clock.Advance(time.Hour)
	add("2", "a", 1)
	add("2", "a", 2)
	cases := []struct {
		name string
		f    backend.DeliveryFilter
		want []string // job/sub/attempt, newest first
	}{
		{"all", backend.DeliveryFilter{}, []string{"2a2", "2a1", "1b1", "1a1"}},
		{"job", backend.DeliveryFilter{JobID: "1"}, []string{"1b1", "1a1"}},
		{"subscription", backend.DeliveryFilter{Subscription: "a"}, []string{"2a2", "2a1", "1a1"}},
		{"event", backend.DeliveryFilter{EventID: "evt-2"}, []string{"2a2", "2a1"}},
		{"both", backend.DeliveryFilter{JobID: "1", Subscription: "b"}, []string{"1b1"}},
		{"none", backend.DeliveryFilter{JobID: "3"}, nil},
	}
	for _, c := range cases {
		var got []string
		for _, d := range h.allDeliveries(t, c.f) {
			got = append(got, d.JobID+d.Subscription+string(rune('0'+d.Attempt)))
		}
		if !equalStrings(got, c.want) {
			t.Errorf("%s: deliveries %v, want %v", c.name, got, c.want)
		}
	}
	d := h.allDeliveries(t, backend.DeliveryFilter{JobID: "1", Subscription: "a"})[0]
	if d.Status != 200 || d.Latency != 3*time.Millisecond || d.Outcome != backend.DeliveryOK ||
		!sameTime(d.At, Epoch) || d.URL != "https://example.com" || d.EventType != queue.EventJobCompleted {
		t.Errorf("delivery = %+v, want status 200, 3ms, delivered, at %v", d, Epoch)
	}
	_, err := h.Outbox.Deliveries(ctx, backend.DeliveryFilter{Cursor: "not a cursor"})
	wantErr(t, "Deliveries with a bad cursor", err, queue.ErrInvalidArgument)
	if n, err := h.Outbox.PruneDeliveries(ctx, 30*time.Minute, 0); err != nil || n != 2 {
		t.Fatalf("PruneDeliveries(30m) = %d, %v; want the 2 older entries", n, err)
	}
	if got := h.allDeliveries(t, backend.DeliveryFilter{}); len(got) != 2 || got[0].JobID != "2" {
		t.Fatalf("after pruning: %d entries, want job 2's two", len(got))
	}
}

// allDeliveries reads every page of the log, two entries per page.
func (h *outboxHarness) allDeliveries(t *testing.T, f backend.DeliveryFilter) []backend.Delivery {
	t.Helper()
	f.Limit = 2
	var out []backend.Delivery
	for {
		p, err := h.Outbox.Deliveries(context.Background(), f)
		if err != nil {
			t.Fatalf("Deliveries(%+v): %v", f, err)
		}
		out = append(out, p.Deliveries...)
		if p.Next == "" {
			return out
		}
		f.Cursor = p.Next
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
