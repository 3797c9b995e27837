package redisqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// TestEnqueueMessageOnlyForOthers: an enqueue into an empty queue sends
// its message only when another process listens. An observer on a pattern
// (which the channel's listener count leaves out) sees what is sent; a
// marker published after each enqueue says when nothing was. Both paths:
// a plain job's (lean) and a tenant's (the full scripts).
func TestEnqueueMessageOnlyForOthers(t *testing.T) {
	for _, srv := range servers {
		for _, tenant := range []string{"", "acme"} {
			t.Run(srv.name+"/tenant="+tenant, func(t *testing.T) {
				testEnqueueMessageOnlyForOthers(t, srv.open(t), tenant)
			})
		}
	}
}

// testEnqueueMessageOnlyForOthers is the test on server s, with jobs of
// tenant (none when empty).
func testEnqueueMessageOnlyForOthers(t *testing.T, s server, tenant string) {
	ctx := context.Background()
	be := s.backend(t, redisqueue.Options{})
	wake, stop := be.Subscribe([]string{"q"})
	defer stop()
	testutil.Eventually(t, "the subscription confirmed", func() bool { return redisqueue.Listening(be, "q") })
	c := s.client(t)
	obs := c.PSubscribe(ctx, redisqueue.Channel(be, "q"))
	defer obs.Close()
	if _, err := obs.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	msgs := obs.Channel()
	// next is the first message the observer sees after an enqueue.
	next := func() string {
		t.Helper()
		if err := c.Publish(ctx, redisqueue.Channel(be, "q"), "marker").Err(); err != nil {
			t.Fatal(err)
		}
		first := ""
		for {
			select {
			case m := <-msgs:
				if first == "" {
					first = m.Payload
				}
				if m.Payload == "marker" {
					return first
				}
			case <-time.After(time.Minute):
				t.Fatal("the marker never came")
			}
		}
	}
	drain := func() {
		ls, err := be.Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, WorkerID: "w", Max: 10, LeaseFor: time.Minute})
		if err != nil || len(ls) != 1 {
			t.Fatalf("Lease = %d jobs, %v; want 1", len(ls), err)
		}
	}
	enqueue := func() {
		if _, err := be.Enqueue(ctx, []queue.JobSpec{{Queue: "q", Kind: "k", Tenant: tenant}}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-wake:
		case <-time.After(time.Minute):
			t.Fatal("this process's own subscriber was not woken")
		}
	}

	enqueue()
	if got := next(); got != "marker" {
		t.Errorf("alone: the enqueue sent %q, want no message", got)
	}
	drain()

	other := s.backend(t, redisqueue.Options{})
	otherWake, stopOther := other.Subscribe([]string{"q"})
	defer stopOther()
	testutil.Eventually(t, "the other subscription confirmed", func() bool { return redisqueue.Listening(other, "q") })
	enqueue()
	if got := next(); got == "marker" {
		t.Error("with another listener: the enqueue sent no message")
	}
	select {
	case <-otherWake:
	case <-time.After(time.Minute):
		t.Fatal("the other process was not woken")
	}
}
