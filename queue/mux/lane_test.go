package mux_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/mux"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// On a router over SQLite and the lane, a unique job is refused for the
// lane's queue, naming amqpqueue, and accepted for SQLite's; both kinds of
// job run through one lease call.
func TestLaneAndSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.Real
	m := newMux(t, openSQLite(t, clk, sqlitequeue.Options{}), mux.Route{Name: "rabbitmq", Backend: openLane(t, clk, []string{"scrape"}), Queues: []string{"scrape"}})
	c := queue.NewClient(m)
	_, err := c.Enqueue(ctx, queue.JobSpec{Queue: "scrape", Kind: "k", UniqueKey: "u"})
	var ue *queue.UnsupportedError
	if !errors.As(err, &ue) || ue.Backend != "amqpqueue" || ue.Feature != queue.CapUnique {
		t.Fatalf("unique job on the lane = %v, want amqpqueue's *UnsupportedError", err)
	}
	res, err := c.EnqueueBatch(ctx, []queue.JobSpec{{Queue: "report", Kind: "k", UniqueKey: "u"}, {Queue: "scrape", Kind: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res[1].Job.ID, "rabbitmq.") || strings.Contains(res[0].Job.ID, ".") {
		t.Fatalf("ids = %s, %s; want a plain SQLite id and a rabbitmq. one", res[0].Job.ID, res[1].Job.ID)
	}
	var leased []queue.Lease
	testutil.Eventually(t, "a lease of both jobs", func() error {
		ls, err := m.Lease(ctx, backend.LeaseRequest{Queues: []string{"report", "scrape"}, WorkerID: "w", Max: 2 - len(leased), LeaseFor: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if leased = append(leased, ls...); len(leased) < 2 {
			return fmt.Errorf("leased %d", len(leased))
		}
		return nil
	})
	for _, l := range leased {
		if err := m.Complete(ctx, l.Job.ID, l.Token, nil); err != nil {
			t.Fatalf("Complete(%s): %v", l.Job.ID, err)
		}
		if j, err := m.Get(ctx, l.Job.ID); err != nil || j.State != queue.StateCompleted {
			t.Fatalf("Get(%s) = %+v, %v; want completed", l.Job.ID, j, err)
		}
	}
}

// A subscription over queues of two backends wakes on either.
func TestSubscribeWakesOnEitherBackend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(queuetest.Epoch)
	m := newMux(t, openSQLite(t, clk, sqlitequeue.Options{}), mux.Route{Name: "b", Backend: openSQLite(t, clk, sqlitequeue.Options{}), Queues: []string{"bq"}})
	wake, stop := m.Subscribe([]string{"aq", "bq"})
	defer stop()
	for _, q := range []string{"aq", "bq"} {
		if _, err := m.Enqueue(ctx, []queue.JobSpec{{Queue: q, Kind: "k", MaxAttempts: 1}}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-wake:
		case <-time.After(20 * time.Second):
			t.Fatalf("no wake-up after an enqueue to %s", q)
		}
	}
}
