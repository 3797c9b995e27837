package webhook_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/webhook"
)

// keyReceiver fails the first attempt of every delivery (by its
// Idempotency-Key) and keeps the headers of every request.
type keyReceiver struct {
	mu   sync.Mutex
	seen map[string][]http.Header
}

func (kr *keyReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	k := r.Header.Get("Idempotency-Key")
	kr.seen[k] = append(kr.seen[k], r.Header.Clone())
	if len(kr.seen[k]) == 1 {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
}

func (kr *keyReceiver) requests() int {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	n := 0
	for _, hs := range kr.seen {
		n += len(hs)
	}
	return n
}

// TestDeliveryIDs: a job's webhook, its group's webhook and a subscription
// at one receiver get the same events; each delivery (event ×
// subscription) has its own Idempotency-Key, so a receiver deduplicating
// by it drops none, while the retry of a delivery keeps its key. The
// event id is the same in all of them.
func TestDeliveryIDs(t *testing.T) {
	for name, open := range hookBackends() {
		t.Run(name, func(t *testing.T) {
			clk := clock.NewFake(epoch)
			b := open(t, clk)
			kr := &keyReceiver{seen: map[string][]http.Header{}}
			srv := newServer(t, kr.ServeHTTP)
			ctx := context.Background()
			if _, err := queue.NewClient(b).CreateGroup(ctx, queue.GroupSpec{ID: "g", Webhook: &queue.Webhook{URL: srv.URL}}); err != nil {
				t.Fatal(err)
			}
			d := newDispatcher(t, b, webhook.Config{Clock: clk, Jobs: &webhook.JobHooks{Backend: b},
				Subscriptions: []webhook.Subscription{{Name: "audit", URL: srv.URL}}})
			finish(t, b, queue.JobSpec{Queue: "q", Kind: "k", Group: "g", Webhook: &queue.Webhook{URL: srv.URL}}, nil)
			// job.completed to @job, @group and audit; group.completed to
			// @group and audit: five deliveries, each tried twice.
			for round := 0; round < 20 && kr.requests() < 10; round++ {
				if _, err := d.DispatchOnce(ctx); err != nil {
					t.Fatal(err)
				}
				clk.Advance(time.Minute)
			}
			kr.mu.Lock()
			defer kr.mu.Unlock()
			if len(kr.seen) != 5 {
				t.Fatalf("receiver saw %d idempotency keys %v, want 5 (one per event and subscription)", len(kr.seen), keys(kr.seen))
			}
			events := map[string]map[string]bool{} // event id → subscriptions
			for k, hs := range kr.seen {
				ev := hs[0].Get(webhook.EventIDHeader)
				sub, ok := strings.CutPrefix(k, ev+":")
				if !ok || k != webhook.DeliveryID(ev, sub) || hs[0].Get(webhook.DeliveryIDHeader) != k {
					t.Errorf("key %q, delivery id %q for event %s: want DeliveryID(event, subscription)", k, hs[0].Get(webhook.DeliveryIDHeader), ev)
				}
				if len(hs) != 2 || hs[1].Get(webhook.EventIDHeader) != ev || hs[1].Get(webhook.AttemptHeader) != "2" {
					t.Errorf("delivery %s: %d requests; want its retry with the same key and event", k, len(hs))
				}
				if events[ev] == nil {
					events[ev] = map[string]bool{}
				}
				events[ev][sub] = true
			}
			if len(events) != 2 {
				t.Fatalf("events %v, want job.completed and group.completed", events)
			}
		})
	}
}

func keys(m map[string][]http.Header) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
