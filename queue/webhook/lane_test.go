package webhook_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/amqptest"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/amqpqueue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/mux"
	"github.com/sluicehq/sluice/queue/webhook"
)

// Events forwarded to a delivery queue on a second SQLite store are
// delivered by its workers: signed, retried after a 500, logged in the
// outbox's delivery log.
func TestForwardToQueue(t *testing.T) {
	t.Parallel()
	testForward(t, openBackend(t, clock.Real, false))
}

// The same through the RabbitMQ lane.
func TestForwardToLane(t *testing.T) {
	u := amqptest.URL(t, "webhook delivery on the RabbitMQ lane")
	t.Parallel()
	prefix := amqptest.Prefix(t, u, "webhook", "webhooks")
	lane, err := amqpqueue.New(u, amqpqueue.Options{Prefix: prefix, Logger: quiet, ConnectionName: "sluice-test " + prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lane.Close() })
	testForward(t, lane)
}

func testForward(t *testing.T, laneBackend backend.Backend) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const secret = "s3cret-s3cret-s3cret"
	var mu sync.Mutex
	var verified []error
	rcv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		verified = append(verified, webhook.Verify(secret, r.Header.Get(webhook.SignatureHeader), body, time.Minute, time.Now()))
		first := len(verified) == 1
		mu.Unlock()
		if first {
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
	main := openBackend(t, clock.Real, true)
	m, err := mux.New(main, mux.Route{Name: "lane", Backend: laneBackend, Queues: []string{"webhooks"}})
	if err != nil {
		t.Fatal(err)
	}
	d := newDispatcher(t, m, webhook.Config{
		Subscriptions: []webhook.Subscription{{Name: "billing", URL: rcv.URL, Secret: secret}},
		Backoff:       func(int, error) time.Duration { return time.Millisecond },
		PollInterval:  10 * time.Millisecond,
	})
	w := queue.NewWorker(m, queue.WorkerConfig{Queues: []string{"webhooks"}, Backoff: d.Backoff, PollInterval: 10 * time.Millisecond, Logger: quiet})
	w.Handle(webhook.DeliveryKind, d.Handler())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = d.Forward(ctx, queue.NewClient(m), "webhooks") }()
	go func() { defer wg.Done(); _ = w.Run(ctx) }()
	defer wg.Wait()
	defer cancel()

	jobID := complete(t, m)
	var log *backend.DeliveryPage
	testutil.Eventually(t, "two deliveries in the log", func() error {
		if log, err = m.Deliveries(ctx, backend.DeliveryFilter{}); err != nil {
			t.Fatal(err)
		}
		if len(log.Deliveries) < 2 {
			return fmt.Errorf("the log has %d", len(log.Deliveries))
		}
		return nil
	})
	if len(log.Deliveries) != 2 {
		t.Fatalf("delivery log has %d entries, want 2 (a retry, then delivered)", len(log.Deliveries))
	}
	newest, oldest := log.Deliveries[0], log.Deliveries[1]
	if oldest.Outcome != backend.DeliveryRetry || oldest.Status != 500 || oldest.Attempt != 1 {
		t.Errorf("first attempt = %+v, want a retry after 500", oldest)
	}
	if newest.Outcome != backend.DeliveryOK || newest.Attempt != 2 || newest.JobID != jobID || newest.Subscription != "billing" {
		t.Errorf("second attempt = %+v, want delivered as attempt 2 of job %s", newest, jobID)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, err := range verified {
		if err != nil {
			t.Errorf("request %d: signature: %v", i, err)
		}
	}
	if left, err := m.ClaimEvents(ctx, 10, time.Minute); err != nil || len(left) != 0 {
		t.Errorf("outbox after forwarding: %d events, %v; want none", len(left), err)
	}
}

// A delivery job on a backend with an outbox has events of its own; they
// are acknowledged, never forwarded, so delivery does not feed on itself.
func TestForwardSkipsDeliveryJobEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rcv := newServer(t, nil)
	b := openBackend(t, clock.Real, true)
	d := newDispatcher(t, b, webhook.Config{Subscriptions: []webhook.Subscription{{Name: "a", URL: rcv.URL}}})
	c := queue.NewClient(b)
	complete(t, b)
	if n, err := d.ForwardOnce(ctx, c, "webhooks"); n != 1 || err != nil {
		t.Fatalf("ForwardOnce = %d, %v; want 1 event", n, err)
	}
	ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"webhooks"}, WorkerID: "w", Max: 2, LeaseFor: time.Minute})
	if err != nil || len(ls) != 1 || ls[0].Job.Kind != webhook.DeliveryKind {
		t.Fatalf("Lease = %v, %v; want one delivery job", ls, err)
	}
	if _, err := d.Handler().Work(ctx, ls[0].Job); err != nil {
		t.Fatalf("Handler: %v", err)
	}
	if err := b.Complete(ctx, ls[0].Job.ID, ls[0].Token, nil); err != nil {
		t.Fatal(err)
	}
	if n, err := d.ForwardOnce(ctx, c, "webhooks"); n != 1 || err != nil {
		t.Fatalf("ForwardOnce = %d, %v; want the delivery job's event", n, err)
	}
	st, err := b.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, qs := range st {
		if qs.Queue == "webhooks" && qs.Counts[queue.StatePending] != 0 {
			t.Errorf("webhooks queue = %v, want no new delivery job", qs.Counts)
		}
	}
	if rcv.count() != 1 {
		t.Errorf("receiver got %d requests, want 1", rcv.count())
	}
}
