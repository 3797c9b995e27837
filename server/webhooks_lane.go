package server

import (
	"context"
	"sync"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/webhook"
	"github.com/sluicehq/sluice/server/config"
)

// startLaneWebhooks delivers through the queue webhooks.lane_queue (placed
// on webhooks.lane by the stores) instead of straight from the outbox: one
// loop forwards claimed events into the queue, enqueued (on the RabbitMQ
// lane: published with confirms) before each event is acknowledged, and a
// worker of that queue delivers them with d's signing, guard and delivery
// log. Both stop when ctx ends.
func (s *Server) startLaneWebhooks(ctx context.Context, wg *sync.WaitGroup, d *webhook.Dispatcher, cfg *config.Config) {
	q := cfg.Webhooks.Queue()
	w := queue.NewWorker(s.backend, queue.WorkerConfig{
		Queues: []string{q}, Concurrency: webhook.DefaultConcurrency,
		// A lease outlives an attempt (webhook.DefaultTimeout) with room.
		LeaseFor: 3*webhook.DefaultTimeout + 30*time.Second, Backoff: d.Backoff,
		CleanupEvery: -1, // the server's cleaner covers every queue
		ID:           "sluice-webhooks", Logger: s.log,
	})
	w.Handle(webhook.DeliveryKind, d.Handler())
	fwd := queue.NewClient(s.backend)
	s.log.Info("server: webhooks are delivered through a queue", "queue", q, "backend", cfg.Webhooks.Lane)
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := d.Forward(ctx, fwd, q); err != nil {
			s.log.Error("server: webhook forwarding stopped", "error", err)
		}
	}()
	go func() {
		defer wg.Done()
		if err := w.Run(ctx); err != nil {
			s.log.Error("server: webhook delivery worker stopped", "error", err)
		}
	}()
}
