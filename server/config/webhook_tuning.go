package config

import "time"

// WebhookDelivery tunes how the server's webhook dispatcher delivers
// (webhook.Config). Zero fields are the library's defaults.
type WebhookDelivery struct {
	// Timeout bounds one attempt, response included; default 10s.
	Timeout Duration `yaml:"timeout"`
	// MaxAttempts is how many times an event is sent to a subscription
	// at most, the first included; default 5.
	MaxAttempts int `yaml:"max_attempts"`
	// Backoff is the wait before each next attempt: base·2^(n−1) up to
	// max, with jitter; default {base: 30s, max: 1h}. A 429 or 503's
	// Retry-After, when longer, is waited instead.
	Backoff Backoff `yaml:"backoff"`
	// Concurrency is how many events are delivered at once; default 16.
	Concurrency int `yaml:"concurrency"`
	// LeaseFor is how long a claimed event stays hidden from other
	// dispatchers; default 3×timeout + 30s, at least 2×timeout.
	LeaseFor Duration `yaml:"lease_for"`
	// PollInterval is how long an idle dispatcher waits before looking
	// for events again; default 1s.
	PollInterval Duration `yaml:"poll_interval"`
	// ShutdownTimeout is how long deliveries in flight may finish at
	// shutdown; default timeout.
	ShutdownTimeout Duration `yaml:"shutdown_timeout"`
	// LogRetention is how long delivery log entries are kept; default
	// 7d; negative keeps them forever.
	LogRetention Duration `yaml:"log_retention"`
	// HostRate caps how fast one receiver host is called (flow.HostBudgets);
	// default none.
	HostRate *HostRate `yaml:"host_rate"`
}

// HostRate is Calls attempts per Per to one host.
type HostRate struct {
	// Calls is how many attempts per Per; positive.
	Calls int `yaml:"calls"`
	// Per is the period; positive.
	Per Duration `yaml:"per"`
}

// MaxWebhookAttempts and MaxWebhookConcurrency bound
// WebhookDelivery.MaxAttempts and .Concurrency.
const (
	MaxWebhookAttempts    = 100
	MaxWebhookConcurrency = 1024
)

// EffectiveTimeout is Timeout, or the library's default (10s).
func (d WebhookDelivery) EffectiveTimeout() time.Duration {
	if d.Timeout > 0 {
		return d.Timeout.D()
	}
	return 10 * time.Second
}

func (v *validator) webhookDelivery(d WebhookDelivery) {
	base := []any{"webhooks", "delivery"}
	v.nonNegativeDuration(p(base, "timeout"), d.Timeout)
	if d.MaxAttempts < 0 || d.MaxAttempts > MaxWebhookAttempts {
		v.add(p(base, "max_attempts"), "must be from 0 (default 5) to %d, got %d", MaxWebhookAttempts, d.MaxAttempts)
	}
	v.backoff(p(base, "backoff"), d.Backoff)
	if d.Concurrency < 0 || d.Concurrency > MaxWebhookConcurrency {
		v.add(p(base, "concurrency"), "must be from 0 (default 16) to %d, got %d", MaxWebhookConcurrency, d.Concurrency)
	}
	v.nonNegativeDuration(p(base, "lease_for"), d.LeaseFor)
	if d.LeaseFor > 0 && d.LeaseFor.D() < 2*d.EffectiveTimeout() {
		v.add(p(base, "lease_for"), "must be at least twice timeout (%s), got %s", d.EffectiveTimeout(), d.LeaseFor)
	}
	v.nonNegativeDuration(p(base, "poll_interval"), d.PollInterval)
	v.nonNegativeDuration(p(base, "shutdown_timeout"), d.ShutdownTimeout)
	if r := d.HostRate; r != nil {
		if r.Calls <= 0 {
			v.add(p(base, "host_rate", "calls"), "must be a positive integer, got %d", r.Calls)
		}
		if r.Per <= 0 {
			v.add(p(base, "host_rate", "per"), "must be a positive duration such as 1s, got %s", r.Per)
		}
	}
}
