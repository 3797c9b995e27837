package redisqueue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// TestOutboxConformance runs the outbox suite (which includes webhook
// deliveries through queue/webhook's Dispatcher) on miniredis, and on real
// Redis when SLUICE_REDIS_URL is set, batched and unbatched.
func TestOutboxConformance(t *testing.T) {
	for _, srv := range servers {
		for _, m := range []struct {
			name string
			opts redisqueue.Options
		}{
			{"batched", redisqueue.Options{Outbox: true}},
			{"unbatched", redisqueue.Options{Outbox: true, DisableBatching: true}},
		} {
			t.Run(srv.name+"/"+m.name, func(t *testing.T) {
				queuetest.RunOutbox(t, func(t *testing.T, clk clock.Clock) queue.Backend {
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
	ls, err := b.Lease(ctx, queue.LeaseRequest{Queues: []string{"q"}, WorkerID: "w", Max: 1, LeaseFor: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("Lease = %d, %v", len(ls), err)
	}
	if err := b.Complete(ctx, j.ID, ls[0].Token, nil); err != nil {
		t.Fatal(err)
	}
	_, claimErr := b.ClaimEvents(ctx, 10, time.Minute)
	_, listErr := b.Deliveries(ctx, queue.DeliveryFilter{})
	_, pruneErr := b.PruneDeliveries(ctx, time.Hour, 0)
	for name, err := range map[string]error{
		"ClaimEvents":     claimErr,
		"AckEvent":        b.AckEvent(ctx, "evt_x", "t"),
		"RetryEvent":      b.RetryEvent(ctx, "evt_x", "t", 0),
		"RecordDelivery":  b.RecordDelivery(ctx, queue.Delivery{EventID: "e", Subscription: "s", Attempt: 1, Outcome: queue.DeliveryOK}),
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
