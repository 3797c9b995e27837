package queue

import (
	"context"
	"sync"

	"github.com/sluicehq/sluice/queue/backend"
)

// maintain runs the worker's background duties until ctx ends: rescuing
// expired leases in its queues and, unless disabled, cleaning them.
func (w *Worker) maintain(ctx context.Context) {
	cfg := w.cfg
	var wg sync.WaitGroup
	if cfg.CleanupEvery > 0 {
		c := NewCleaner(w.b, CleanerConfig{
			Queues: cfg.Queues, Retention: cfg.Retention, Interval: cfg.CleanupEvery,
			Clock: cfg.Clock, Logger: cfg.Logger,
		})
		wg.Add(1)
		go func() { defer wg.Done(); _ = c.Run(ctx) }()
	}
	defer wg.Wait()
	for {
		w.rescue(ctx)
		t := cfg.Clock.NewTimer(cfg.RescueEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// rescue recovers expired leases, batch after batch while batches are full.
func (w *Worker) rescue(ctx context.Context) {
	cfg := w.cfg
	for ctx.Err() == nil {
		res, err := w.b.RescueExpired(ctx, backend.RescueRequest{Queues: cfg.Queues, MaxStalls: cfg.MaxStalls, Limit: backend.DefaultBatchLimit})
		if err != nil {
			if ctx.Err() == nil {
				cfg.Logger.Error("queue: rescue failed", "worker", cfg.ID, "err", err)
			}
			return
		}
		if res.Total() > 0 {
			cfg.Logger.Warn("queue: rescued jobs with expired leases", "worker", cfg.ID,
				"requeued", res.Requeued, "failed", res.Failed, "cancelled", res.Cancelled)
		}
		if res.Total() < backend.DefaultBatchLimit {
			return
		}
	}
}
