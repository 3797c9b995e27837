package webhook

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"go.opentelemetry.io/otel/trace"
)

// Defaults of Config.
const (
	DefaultTimeout      = 10 * time.Second
	DefaultMaxAttempts  = 5
	DefaultConcurrency  = 16
	DefaultPollInterval = time.Second
	DefaultLogRetention = 7 * 24 * time.Hour
	DefaultFirstBackoff = 30 * time.Second
	DefaultMaxBackoff   = time.Hour
)

// DefaultBackoff is the wait before retrying after failed attempt n (from
// 1): 30s·2^(n−1) capped at one hour, with equal jitter (uniform in the
// upper half), so receivers that fail together are not all retried
// together. With the default 5 attempts the retries come after about
// 30s, 1m, 2m and 4m.
var DefaultBackoff = queue.ExponentialBackoff(DefaultFirstBackoff, DefaultMaxBackoff)

// Config configures a Dispatcher. The zero value is the default, with no
// subscriptions (every event is acknowledged without being sent).
type Config struct {
	// Subscriptions receive the events they want. Names must be unique.
	Subscriptions []Subscription
	// Timeout bounds one delivery attempt, response included; default
	// 10s. A receiver that needs longer should answer 2xx at once and do
	// the work afterwards.
	Timeout time.Duration
	// MaxAttempts is how many times an event is sent to a subscription at
	// most, the first included; default 5.
	MaxAttempts int
	// Backoff is the wait before the next attempt after failed attempt n
	// (from 1); default DefaultBackoff. A 429 or 503 answer's
	// Retry-After, when longer, is waited instead (up to one hour).
	Backoff func(attempt int, err error) time.Duration
	// Concurrency is how many events are delivered at once; default 16.
	// Each event goes to its subscriptions in parallel.
	Concurrency int
	// LeaseFor is how long a claimed event stays hidden from other
	// dispatchers; default 3×Timeout + 30s, at least 2×Timeout. A
	// delivery round is cut off before its claim expires, so two live
	// dispatchers never send the same event at once.
	LeaseFor time.Duration
	// PollInterval is how long an idle dispatcher waits before looking for
	// events again; default 1s.
	PollInterval time.Duration
	// ShutdownTimeout is how long Run lets deliveries in flight finish
	// once its context ends, before it cancels them; default Timeout.
	// A cancelled attempt is not counted and its event is released to be
	// sent again.
	ShutdownTimeout time.Duration
	// LogRetention is how long delivery log entries are kept; default 7
	// days; negative keeps them forever. Run prunes once an hour.
	LogRetention time.Duration
	// Guard refuses internal addresses; the zero Guard refuses every
	// range in Refused.
	Guard Guard
	// Resolve replaces the system resolver (for tests); default nil.
	Resolve Resolver
	// HostBudget, when set, returns the budget one attempt to a host
	// waits for first (nil for no budget), such as
	// (*flow.HostBudgets).For: a cap on how fast one receiver is called.
	// The wait is not part of Timeout; an attempt whose wait would
	// outlast the round is not sent and not counted.
	HostBudget func(host string) flow.Limiter
	// OnGone, when set, is called after a subscription answered 410 Gone
	// (and was disabled in this dispatcher), so the application can
	// remove it from its configuration for good.
	OnGone func(Subscription)
	// OnDelivery, when set, is called after every recorded attempt with
	// its log entry, from the delivering goroutine: it must be quick and
	// must not block (metrics, not I/O).
	OnDelivery func(backend.Delivery)
	// Jobs, when set, also delivers the webhooks given with jobs and
	// groups (queue.Webhook); default nil: only Subscriptions.
	Jobs *JobHooks
	// TracerProvider, when set, traces every delivery attempt as a span
	// continuing the trace of the job's enqueue; default nil: no spans
	// and no cost.
	TracerProvider trace.TracerProvider
	// ID names the dispatcher in logs; default "webhook".
	ID string
	// Clock drives polling and signature timestamps; default the real
	// clock.
	Clock clock.Clock
	// Logger receives failures and faults; default slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.Backoff == nil {
		c.Backoff = DefaultBackoff
	}
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.LeaseFor <= 0 {
		c.LeaseFor = 3*c.Timeout + 30*time.Second
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = c.Timeout
	}
	if c.LogRetention == 0 {
		c.LogRetention = DefaultLogRetention
	}
	if c.ID == "" {
		c.ID = "webhook"
	}
	if c.Jobs != nil && c.Jobs.CacheFor <= 0 {
		jh := *c.Jobs
		jh.CacheFor = 30 * time.Second
		c.Jobs = &jh
	}
	c.Clock = clock.Or(c.Clock)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// validate checks c after defaults.
func (c Config) validate() error {
	if c.LeaseFor < 2*c.Timeout {
		return fmt.Errorf("webhook: Config.LeaseFor must be at least twice Config.Timeout (%s), got %s", c.Timeout, c.LeaseFor)
	}
	if c.Jobs != nil && c.Jobs.Backend == nil {
		return fmt.Errorf("webhook: Config.Jobs.Backend is required")
	}
	seen := map[string]bool{}
	for i, s := range c.Subscriptions {
		if err := s.Validate(); err != nil {
			return fmt.Errorf("webhook: Config.Subscriptions[%d]: %w", i, err)
		}
		if seen[s.Name] {
			return fmt.Errorf("webhook: Config.Subscriptions[%d]: Name %q is used twice", i, s.Name)
		}
		seen[s.Name] = true
	}
	return nil
}
