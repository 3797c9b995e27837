package queuetest

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/webhook"
)

// liveConfig is a dispatcher config for Run on the real clock, polling
// often; the backend keeps its fake clock, so claims never expire.
func liveConfig(subs ...webhook.Subscription) webhook.Config {
	return webhook.Config{
		Subscriptions: subs, Clock: clock.Real, PollInterval: 2 * time.Millisecond, Concurrency: 4,
		Backoff: func(int, error) time.Duration { return 0 },
	}
}

// testWebhookSlowReceiver completes jobs while the receiver holds every
// request: all completions return before the receiver has answered even
// once, so delivery never holds up a job. Then the receiver lets go and
// every event arrives.
func testWebhookSlowReceiver(t *testing.T, f Factory) {
	t.Parallel()
	h := newOutboxHarness(t, f)
	const n = 20
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	var answered atomic.Int64
	rc := newReceiver(t, func(int, received) int {
		<-release
		answered.Add(1)
		return http.StatusOK
	})
	t.Cleanup(free) // runs before the server closes, so its handlers can return
	stop := testutil.Start(t, h.dispatcher(t, liveConfig(rc.sub("slow"))))
	ids := map[string]bool{h.completeOne(t): true}
	testutil.Eventually(t, "the first delivery to reach the receiver", func() bool { return len(rc.requests()) > 0 })
	for i := 0; i < n; i++ {
		ids[h.completeOne(t)] = true
	}
	if a := answered.Load(); a != 0 {
		t.Fatalf("receiver answered %d requests before it was released", a)
	}
	if got := len(rc.requests()); got > 4 {
		t.Fatalf("receiver holds %d requests, more than the dispatcher's concurrency 4", got)
	}
	if c := h.completedJobs(t); c != n+1 {
		t.Fatalf("%d jobs completed, want %d", c, n+1)
	}
	free()
	testutil.Eventually(t, "every event to be delivered", func() bool { return len(rc.countByID()) == len(ids) })
	stop()
	for _, r := range rc.requests() {
		if !ids[r.Event.JobID] {
			t.Errorf("delivered an event of unknown job %q", r.Event.JobID)
		}
	}
}

// completedJobs counts completed jobs in queue q.
func (h *outboxHarness) completedJobs(t *testing.T) int64 {
	t.Helper()
	st, err := h.Client.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return count(st, QueueQ, queue.StateCompleted)
}

// testWebhookTwoDispatchers runs two dispatchers on one outbox: every
// event arrives exactly once (no failures, so no redelivery).
func testWebhookTwoDispatchers(t *testing.T, f Factory) {
	t.Parallel()
	h := newOutboxHarness(t, f)
	n := testutil.Size(60, 200)
	rc := newReceiver(t, nil)
	var stops []func()
	for i := 0; i < 2; i++ {
		cfg := liveConfig(rc.sub("a"))
		cfg.ID = "d" + string(rune('1'+i))
		stops = append(stops, testutil.Start(t, h.dispatcher(t, cfg)))
	}
	ids := map[string]bool{}
	for i := 0; i < n; i++ {
		ids[h.completeOne(t)] = true
	}
	testutil.Eventually(t, "every event to be delivered", func() bool { return len(rc.countByID()) == n })
	for _, stop := range stops {
		stop()
	}
	for id, k := range rc.countByID() {
		if k != 1 {
			t.Errorf("event %s delivered %d times, want once", id, k)
		}
	}
	for _, r := range rc.requests() {
		if !ids[r.Event.JobID] {
			t.Errorf("delivered an event of unknown job %q", r.Event.JobID)
		}
	}
	h.Clock.Advance(time.Hour)
	if left := h.claimAll(t); len(left) != 0 {
		t.Fatalf("%d events left in the outbox", len(left))
	}
}

// crashedOutbox is an outbox whose process dies right after sending: the
// claim works, every later write fails, as if the dispatcher was killed
// between the request and recording it.
type crashedOutbox struct{ backend.Outbox }

var errCrashed = errors.New("queuetest: dispatcher crashed")

func (crashedOutbox) AckEvent(context.Context, string, string) error { return errCrashed }
func (crashedOutbox) RetryEvent(context.Context, string, string, time.Duration) error {
	return errCrashed
}
func (crashedOutbox) RecordDelivery(context.Context, backend.Delivery) error { return errCrashed }

// testWebhookCrash: a dispatcher dies after its request reached the
// receiver; its claim holds until it expires, then another dispatcher
// sends the same event again, with the same id (at least once).
func testWebhookCrash(t *testing.T, f Factory) {
	t.Parallel()
	h := newOutboxHarness(t, f)
	rc := newReceiver(t, nil)
	cfg := webhook.Config{Subscriptions: []webhook.Subscription{rc.sub("a")}, LeaseFor: time.Minute}
	crashed, err := webhook.New(crashedOutbox{h.Outbox}, webhook.Config{
		Subscriptions: cfg.Subscriptions, LeaseFor: cfg.LeaseFor, Guard: webhook.Guard{AllowAll: true},
		Clock: h.Clock, Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	healthy := h.dispatcher(t, cfg)
	id := h.completeOne(t)
	dispatchOnce(t, crashed, 1)
	dispatchOnce(t, healthy, 0) // the dead dispatcher's claim still holds
	h.Clock.Advance(time.Minute + time.Second)
	dispatchOnce(t, healthy, 1)
	got := rc.requests()
	if len(got) != 2 || got[0].ID != got[1].ID || got[0].Event.JobID != id {
		t.Fatalf("receiver got %+v, want the same event twice", got)
	}
	for _, r := range got {
		if err := webhook.Verify(testSecret, r.Signature, r.Body, 5*time.Minute, h.Clock.Now()); err != nil {
			t.Errorf("Verify: %v", err)
		}
	}
	if log := h.log(t, backend.DeliveryFilter{JobID: id}); !equalStrings(log, []string{"204/delivered/1"}) {
		t.Errorf("delivery log = %v, want the healthy dispatcher's one attempt", log)
	}
	h.Clock.Advance(time.Hour)
	dispatchOnce(t, healthy, 0)
}
