package server

import (
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/webhook"
	"github.com/sluicehq/sluice/server/config"
)

// tuneWebhooks sets the dispatcher's delivery settings from
// webhooks.delivery; zero keys keep the library's defaults. The config
// was validated, so the host rate is well formed.
func maxDur(a, b time.Duration) time.Duration { return max(a, b) }

func tuneWebhooks(c *webhook.Config, d config.WebhookDelivery) {
	c.Timeout, c.MaxAttempts, c.Concurrency = d.Timeout.D(), d.MaxAttempts, d.Concurrency
	c.LeaseFor, c.PollInterval, c.ShutdownTimeout, c.LogRetention = d.LeaseFor.D(), d.PollInterval.D(), d.ShutdownTimeout.D(), d.LogRetention.D()
	if b := d.Backoff; b.Base > 0 || b.Max > 0 {
		base, max := b.Base.D(), b.Max.D()
		if base == 0 {
			base = webhook.DefaultFirstBackoff
		}
		if max == 0 {
			max = maxDur(webhook.DefaultMaxBackoff, base) // a base over the default cap is kept
		}
		c.Backoff = queue.ExponentialBackoff(base, max)
	}
	if r := d.HostRate; r != nil {
		if hb, err := flow.NewHostBudgets(r.Calls, r.Per.D()); err == nil {
			c.HostBudget = hb.For
		}
	}
}
