package redisqueue_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/redisqueue"
	"github.com/sluicehq/sluice/queue/webhook"
)

// TestOutboxConformance runs the outbox suite (which includes webhook
// deliveries through queue/webhook's Dispatcher) on miniredis, and on real
// Redis when SLUICE_REDIS_URL is set, batched, and in the full matrix
// (SLUICE_TEST_FULL=1) unbatched too.
func TestOutboxConformance(t *testing.T) {
	for _, srv := range servers {
		for i, m := range []struct {
			name string
			opts redisqueue.Options
		}{
			{"batched", redisqueue.Options{Outbox: true}},
			{"unbatched", redisqueue.Options{Outbox: true, DisableBatching: true}},
		} {
			t.Run(srv.name+"/"+m.name, func(t *testing.T) {
				if i > 0 {
					testutil.NeedFull(t, "the "+m.name+" mode")
				}
				queuetest.RunOutbox(t, func(t *testing.T, clk clock.Clock) backend.Backend {
					opts := m.opts
					opts.Clock = clk
					return srv.open(t).backend(t, opts)
				})
			})
		}
	}
}

// TestOutboxOff checks that a backend opened without the outbox records
// nothing and says so from every Outbox method.
func TestOutboxOff(t *testing.T) {
	t.Parallel()
	s := miniServer(t)
	b := s.backend(t, redisqueue.Options{})
	ctx := context.Background()
	j, err := queue.NewClient(b).Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k"})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, WorkerID: "w", Max: 1, LeaseFor: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("Lease = %d, %v", len(ls), err)
	}
	if err := b.Complete(ctx, j.ID, ls[0].Token, nil); err != nil {
		t.Fatal(err)
	}
	_, claimErr := b.ClaimEvents(ctx, 10, time.Minute)
	_, listErr := b.Deliveries(ctx, backend.DeliveryFilter{})
	_, pruneErr := b.PruneDeliveries(ctx, time.Hour, 0)
	for name, err := range map[string]error{
		"ClaimEvents":     claimErr,
		"AckEvent":        b.AckEvent(ctx, "evt_x", "t"),
		"RetryEvent":      b.RetryEvent(ctx, "evt_x", "t", 0),
		"RecordDelivery":  b.RecordDelivery(ctx, backend.Delivery{EventID: "e", Subscription: "s", Attempt: 1, Outcome: backend.DeliveryOK}),
		"Deliveries":      listErr,
		"PruneDeliveries": pruneErr,
	} {
		if !errors.Is(err, queue.ErrOutboxOff) {
			t.Errorf("%s with the outbox off: %v, want ErrOutboxOff", name, err)
		}
	}
	keys, err := s.client(t).Keys(ctx, string(s.prefix)+"outbox:*").Result()
	if err != nil || len(keys) != 0 {
		t.Errorf("outbox keys with the outbox off: %v, %v; want none", keys, err)
	}
}

// TestOutboxRefusedOnCluster checks that New refuses Options.Outbox on a
// Redis Cluster client, naming the option.
func TestOutboxRefusedOnCluster(t *testing.T) {
	t.Parallel()
	s := miniServer(t)
	_, err := redisqueue.New(s.clusterClient(t), redisqueue.Options{Prefix: s.prefix, Logger: quiet, Outbox: true})
	var inv *queue.InvalidArgumentError
	if !errors.As(err, &inv) || inv.Field != "Options.Outbox" {
		t.Fatalf("New(cluster, Outbox) = %v, want an invalid Options.Outbox", err)
	}
}

// TestOutboxWebhook delivers a real job.completed event from a redisqueue
// backend through queue/webhook's Dispatcher to an httptest receiver and
// checks its signature.
func TestOutboxWebhook(t *testing.T) {
	t.Parallel()
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			type request struct {
				sig  string
				body []byte
			}
			got := make(chan request, 4)
			rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				got <- request{r.Header.Get(webhook.SignatureHeader), body}
			}))
			defer rc.Close()
			b := srv.open(t).backend(t, redisqueue.Options{Outbox: true})
			id := completeJob(t, b, queue.JobSpec{Queue: "mail", Kind: "send", Tenant: "acme"})
			d, err := webhook.New(b, webhook.Config{
				Subscriptions: []webhook.Subscription{{Name: "ops", URL: rc.URL, Secret: "k"}},
				Guard:         webhook.Guard{AllowAll: true}, // the receiver listens on 127.0.0.1
				Logger:        quiet,
			})
			if err != nil {
				t.Fatal(err)
			}
			if n, err := d.DispatchOnce(context.Background()); err != nil || n != 1 {
				t.Fatalf("DispatchOnce = %d, %v; want 1 event", n, err)
			}
			r := <-got
			var e queue.Event
			if err := json.Unmarshal(r.body, &e); err != nil {
				t.Fatalf("body %s: %v", r.body, err)
			}
			if e.Type != queue.EventJobCompleted || e.JobID != id || e.Queue != "mail" || e.Kind != "send" ||
				e.Tenant != "acme" || e.State != queue.StateCompleted || e.Attempt != 1 || !eventID.MatchString(e.ID) {
				t.Errorf("delivered %+v, want job.completed of job %s in mail", e, id)
			}
			if err := webhook.Verify("k", r.sig, r.body, time.Minute, time.Now()); err != nil {
				t.Errorf("Verify(%q): %v", r.sig, err)
			}
			p, err := b.Deliveries(context.Background(), backend.DeliveryFilter{JobID: id})
			if err != nil || len(p.Deliveries) != 1 || p.Deliveries[0].Outcome != backend.DeliveryOK {
				t.Errorf("Deliveries(job) = %+v, %v; want one delivered attempt", p, err)
			}
		})
	}
}

// eventID is the format of backend.NewEventID.
var eventID = regexp.MustCompile(`^evt_[0-9a-f]{32}$`)

// completeJob enqueues, leases and completes one job and returns its id.
func completeJob(t *testing.T, b *redisqueue.Backend, s queue.JobSpec) string {
	t.Helper()
	ctx := context.Background()
	j, err := queue.NewClient(b).Enqueue(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{s.Queue}, WorkerID: "w", Max: 1, LeaseFor: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("Lease = %d, %v", len(ls), err)
	}
	if err := b.Complete(ctx, j.ID, ls[0].Token, nil); err != nil {
		t.Fatal(err)
	}
	return j.ID
}

// TestOutboxEventIDs checks the ids: backend.NewEventID's format, unique
// across two stores whose event counters are equal, and claimed in the
// order the events were recorded when they are due at the same time.
func TestOutboxEventIDs(t *testing.T) {
	t.Parallel()
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			testOutboxEventIDs(t, srv.open)
		})
	}
}

func testOutboxEventIDs(t *testing.T, open func(testing.TB) server) {
	clk := clock.NewFake(queuetest.Epoch)
	ids := map[string]bool{}
	for range 2 {
		b := open(t).backend(t, redisqueue.Options{Outbox: true, Clock: clk})
		var jobs []string
		for range 5 {
			jobs = append(jobs, completeJob(t, b, queue.JobSpec{Queue: "q", Kind: "k"}))
		}
		cs, err := b.ClaimEvents(context.Background(), 10, time.Minute)
		if err != nil || len(cs) != len(jobs) {
			t.Fatalf("ClaimEvents = %d, %v; want %d", len(cs), err, len(jobs))
		}
		for i, c := range cs {
			if !eventID.MatchString(c.Event.ID) || ids[c.Event.ID] {
				t.Errorf("event id %q: want evt_ and 32 hex digits, never seen before", c.Event.ID)
			}
			ids[c.Event.ID] = true
			if c.Event.JobID != jobs[i] {
				t.Errorf("claim %d is job %s's event, want job %s's (recording order)", i, c.Event.JobID, jobs[i])
			}
		}
	}
}

// TestOutboxKeysCleared checks that acknowledged events and pruned log
// entries leave no keys behind but the two counters, with job ids and
// subscription names that need escaping in keys.
func TestOutboxKeysCleared(t *testing.T) {
	t.Parallel()
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			testOutboxKeysCleared(t, srv.open(t))
		})
	}
}

func testOutboxKeysCleared(t *testing.T, s server) {
	clk := clock.NewFake(queuetest.Epoch)
	b := s.backend(t, redisqueue.Options{Outbox: true, Clock: clk})
	ctx := context.Background()
	completeJob(t, b, queue.JobSpec{Queue: "q:{odd} ü", Kind: "k"})
	cs, err := b.ClaimEvents(ctx, 10, time.Minute)
	if err != nil || len(cs) != 1 {
		t.Fatalf("ClaimEvents = %d, %v; want 1", len(cs), err)
	}
	e := cs[0].Event
	for i, sub := range []string{"a:b", "ü {x}", "log"} {
		d := backend.Delivery{EventID: e.ID, EventType: e.Type, JobID: e.JobID, Subscription: sub,
			URL: "https://example.com", Attempt: 1, Status: 200, Outcome: backend.DeliveryOK}
		if err := b.RecordDelivery(ctx, d); err != nil {
			t.Fatal(err)
		}
		p, err := b.Deliveries(ctx, backend.DeliveryFilter{Subscription: sub, JobID: e.JobID})
		if err != nil || len(p.Deliveries) != 1 || p.Deliveries[0].Subscription != sub {
			t.Fatalf("Deliveries(%q) = %+v, %v; want its one entry", sub, p, err)
		}
		if p, _ := b.Deliveries(ctx, backend.DeliveryFilter{EventID: e.ID}); len(p.Deliveries) != i+1 {
			t.Fatalf("Deliveries(event) = %d entries, want %d", len(p.Deliveries), i+1)
		}
	}
	// An entry of an event no longer (or never) in the outbox, named
	// oddly: its index is found by the name Go escaped and cleared by the
	// one the prune script escaped from the entry.
	odd := backend.Delivery{EventID: "evt:{x} 50%~é", JobID: "1893553445000000-c%3Ad", Subscription: "s~%",
		Attempt: 2, Outcome: backend.DeliveryOK}
	if err := b.RecordDelivery(ctx, odd); err != nil {
		t.Fatal(err)
	}
	for _, f := range []backend.DeliveryFilter{{EventID: odd.EventID}, {JobID: odd.JobID}, {Subscription: odd.Subscription}} {
		if p, err := b.Deliveries(ctx, f); err != nil || len(p.Deliveries) != 1 || p.Deliveries[0].EventID != odd.EventID {
			t.Fatalf("Deliveries(%+v) = %+v, %v; want the odd entry alone", f, p, err)
		}
	}
	// The scripts escape key segments as package keyspace does.
	rc := s.client(t)
	for _, k := range []string{"log:sub:" + keyspace.Escape("ü {x}"), "log:job:" + keyspace.Escape(e.JobID),
		"log:event:" + keyspace.Escape(odd.EventID), "log:job:" + keyspace.Escape(odd.JobID), "log:sub:" + keyspace.Escape(odd.Subscription)} {
		if n, err := rc.Exists(ctx, string(s.prefix)+"outbox:"+k).Result(); err != nil || n != 1 {
			t.Errorf("key outbox:%s exists = %d, %v; want 1", k, n, err)
		}
	}
	if err := b.AckEvent(ctx, e.ID, cs[0].Token); err != nil {
		t.Fatal(err)
	}
	if n, err := b.PruneDeliveries(ctx, 0, 0); err != nil || n != 4 {
		t.Fatalf("PruneDeliveries = %d, %v; want 4", n, err)
	}
	keys, err := rc.Keys(ctx, string(s.prefix)+"outbox:*").Result()
	slices.Sort(keys)
	want := []string{string(s.prefix) + "outbox:log:seq", string(s.prefix) + "outbox:seq"}
	if err != nil || !slices.Equal(keys, want) {
		t.Errorf("outbox keys left = %v, %v; want only %v", keys, err, want)
	}
}

// TestOutboxCursor checks that Deliveries refuses cursors it did not make.
func TestOutboxCursor(t *testing.T) {
	t.Parallel()
	b := miniServer(t).backend(t, redisqueue.Options{Outbox: true})
	for _, c := range []string{"x", "0", "-1", "01", "1.5", "9999999999999999999999"} {
		_, err := b.Deliveries(context.Background(), backend.DeliveryFilter{Cursor: c})
		var inv *queue.InvalidArgumentError
		if !errors.As(err, &inv) || inv.Field != "DeliveryFilter.Cursor" {
			t.Errorf("Deliveries(cursor %q) = %v, want an invalid DeliveryFilter.Cursor", c, err)
		}
	}
}

// TestOutboxPruneLimit checks that PruneDeliveries deletes at most limit
// entries per call, oldest first, and leaves the newer ones.
func TestOutboxPruneLimit(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(queuetest.Epoch)
	b := miniServer(t).backend(t, redisqueue.Options{Outbox: true, Clock: clk})
	ctx := context.Background()
	record := func(job string) {
		d := backend.Delivery{EventID: "e-" + job, JobID: job, Subscription: "s", Attempt: 1, Outcome: backend.DeliveryOK}
		if err := b.RecordDelivery(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	for _, job := range []string{"1", "2", "3", "4", "5"} {
		record(job)
		clk.Advance(time.Minute)
	}
	clk.Advance(time.Hour)
	record("6")
	for _, want := range []int{2, 2, 1, 0} {
		if n, err := b.PruneDeliveries(ctx, 30*time.Minute, 2); err != nil || n != want {
			t.Fatalf("PruneDeliveries(limit 2) = %d, %v; want %d", n, err, want)
		}
	}
	p, err := b.Deliveries(ctx, backend.DeliveryFilter{})
	if err != nil || len(p.Deliveries) != 1 || p.Deliveries[0].JobID != "6" {
		t.Fatalf("after pruning: %+v, %v; want job 6's entry alone", p, err)
	}
}
