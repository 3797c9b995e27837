package server

import (
	"context"
	"fmt"
	"sync"

	"github.com/sluicehq/sluice/queue/webhook"
	"github.com/sluicehq/sluice/server/config"
)

// webhookGuard is the SSRF guard of the server's webhook deliveries: the
// default one, which refuses internal addresses. Tests replace it to reach
// receivers on 127.0.0.1.
var webhookGuard = webhook.Guard{}

// webhooksOn reports whether cfg has subscriptions, and so whether the job
// store must record events in its outbox.
func webhooksOn(cfg *config.Config) bool { return len(cfg.Webhooks.Subscriptions) > 0 }

// webhookSubscriptions turns the config's subscriptions into the
// dispatcher's.
func webhookSubscriptions(w config.Webhooks) []webhook.Subscription {
	out := make([]webhook.Subscription, len(w.Subscriptions))
	for i, s := range w.Subscriptions {
		out[i] = webhook.Subscription{Name: s.Name, URL: s.URL, Secret: s.Secret, Events: s.Events}
	}
	return out
}

// checkWebhooks refuses, before anything starts, subscriptions the
// dispatcher would refuse.
func checkWebhooks(cfg *config.Config) error {
	for i, s := range webhookSubscriptions(cfg.Webhooks) {
		if err := s.Validate(); err != nil {
			return fmt.Errorf("server: webhooks.subscriptions[%d]: %w", i, err)
		}
	}
	return nil
}

// startWebhooks runs a webhook dispatcher for the configured subscriptions
// until ctx ends. Subscriptions are read once: changing them takes a
// restart, like storage.
func (s *Server) startWebhooks(ctx context.Context, wg *sync.WaitGroup) {
	cfg := s.Config()
	if !outboxOn(cfg) || s.backend == nil {
		return
	}
	f := s.backend.Features()
	ob := f.Outbox
	if ob == nil {
		if webhooksOn(cfg) {
			s.log.Warn("server: webhooks are configured but this job store records no events; none will be sent",
				"store", f.Name)
		}
		return
	}
	wc := webhook.Config{Subscriptions: webhookSubscriptions(cfg.Webhooks), Guard: s.liveHookGuard(), Logger: s.log,
		OnDelivery: s.metrics.observeDelivery, Jobs: s.jobHooks(cfg), TracerProvider: s.tracer, Resolve: webhookResolve}
	tuneWebhooks(&wc, cfg.Webhooks.Delivery) // webhooks.delivery: webhooks_tuning.go
	d, err := webhook.New(ob, wc)
	if err != nil {
		s.log.Error("server: webhooks not started", "error", err)
		return
	}
	if cfg.Webhooks.Lane != "" {
		s.startLaneWebhooks(ctx, wg, d, cfg)
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := d.Run(ctx); err != nil {
			s.log.Error("server: webhook dispatcher stopped", "error", err)
		}
	}()
}
