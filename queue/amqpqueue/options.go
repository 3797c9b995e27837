package amqpqueue

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// Defaults of Options.
const (
	DefaultPrefix          = "sluice."
	DefaultPrefetch        = 256
	DefaultMaxRedeliveries = 20
	DefaultPublishers      = 4
	DefaultDeadLetterTTL   = 7 * 24 * time.Hour
	DefaultDeadLetterMax   = 100_000
	DefaultReconnectMin    = 100 * time.Millisecond
	DefaultReconnectMax    = 10 * time.Second
	// MaxPriorities is the largest Options.Priorities RabbitMQ accepts.
	MaxPriorities = 255
)

// DefaultDelayBuckets are the delays of the per-queue delay queues when
// Options.DelayBuckets is empty. A delay is served by the largest bucket
// that fits, then the rest of it by the next bucket, and so on; so with
// these buckets a delayed job starts at most about 250ms after its RunAt
// and a one-day delay costs at most a dozen hops.
var DefaultDelayBuckets = []time.Duration{
	250 * time.Millisecond, time.Second, 5 * time.Second, 30 * time.Second,
	2 * time.Minute, 10 * time.Minute, time.Hour, 6 * time.Hour, 24 * time.Hour,
}

// Options configures a Backend. The zero value is the default.
type Options struct {
	// Prefix is put before every broker queue name: a lane queue "scrape"
	// lives in the broker queue "<Prefix>scrape", its dead letters in
	// "<Prefix>scrape.dead" and its delays in "<Prefix>scrape.delay.<ms>ms".
	// Default "sluice.".
	Prefix string
	// Queues are declared when the backend starts (so Stats sees them
	// from the start); other queues are declared on first use. Default
	// none.
	Queues []string
	// Prefetch is how many unacknowledged deliveries the broker pushes to
	// each queue's consumer ahead of the worker asking, per process. Higher
	// is faster, but a process that dies hands all of them back (each
	// counting as a redelivery). Default 256; at most 65535.
	Prefetch int
	// Consumers is how many channels each queue is consumed on, per
	// process, sharing Prefetch between them. Each channel is a process
	// in the broker: more than one lets a busy queue use more of the
	// broker's cores. Default 1; at most Prefetch.
	Consumers int
	// MaxRedeliveries is how many times a job may come back unacknowledged
	// (its worker died, lost its channel, gave it back, or its lease was
	// rescued) before it goes to the dead-letter queue instead of running
	// again. Default 20.
	MaxRedeliveries int
	// DelayBuckets are the fixed delays of the delay queues (ascending,
	// positive, whole milliseconds). Default DefaultDelayBuckets.
	DelayBuckets []time.Duration
	// Priorities, when positive, makes the lane's queues classic queues
	// with x-max-priority = Priorities, so JobSpec.Priority orders jobs:
	// priority 0 is the most urgent, 0..Priorities-1 are distinct levels,
	// larger values share the least urgent one. The default 0 uses quorum
	// queues (replicated, faster to recover, no priorities) and refuses
	// jobs with a Priority. At most MaxPriorities; RabbitMQ advises 10 or
	// fewer. An existing queue keeps its type: changing this for a queue
	// already declared fails with the broker's PRECONDITION_FAILED.
	Priorities int
	// Publishers is how many confirm-mode channels Enqueue and retries
	// publish on; default 4.
	Publishers int
	// LeaseWait is how long Lease waits for deliveries when fewer than
	// Max are buffered; default 0 (Lease never waits: a Worker is woken
	// through backend.Notifier instead). Real time, not Clock.
	LeaseWait time.Duration
	// Recorder keeps job states for Get; default a MemoryRecorder with its
	// default bounds, reading Clock.
	Recorder Recorder
	// DeadLetterTTL is how long dead-letter queues keep a message; default
	// 7 days (the failed-job retention of the other backends).
	DeadLetterTTL time.Duration
	// DeadLetterMax bounds each dead-letter queue's length; the oldest
	// message is dropped beyond it. Default 100,000.
	DeadLetterMax int
	// ReconnectMin and ReconnectMax bound the backoff between attempts to
	// reconnect (doubling, with jitter); defaults 100ms and 10s.
	ReconnectMin, ReconnectMax time.Duration
	// ConnectionName is shown by the broker's management tools; default
	// "sluice-amqpqueue".
	ConnectionName string
	// Logger receives connection losses, reconnections and recorder
	// faults; default slog.Default().
	Logger *slog.Logger
	// Scheduler, when set, schedules the jobs that name a Tenant or a
	// Group: they are stored, held, ordered and leased by it (tenant
	// limits with their waiting backlog, the fair order and weights,
	// pauses, group limits, crawl delays and completion jobs), while the
	// other jobs go through the broker. It must serve tenants and groups
	// (backend.Features.Tenants and Groups), such as a redisqueue on the
	// Redis that keeps a RedisRecorder, with a prefix of its own; the
	// lane does not close it. Its clock should be Clock. Default nil:
	// the lane has no tenant scheduling and no groups (see doc.go).
	Scheduler backend.Backend
	// Clock is where job timestamps, RunAt and lease deadlines are read;
	// default the real clock. Broker timers (message TTLs) and network
	// waits always run on real time.
	Clock clock.Clock
}

func (o Options) withDefaults() (Options, error) {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.Prefetch == 0 {
		o.Prefetch = DefaultPrefetch
	}
	if o.Consumers == 0 {
		o.Consumers = 1
	}
	if o.MaxRedeliveries == 0 {
		o.MaxRedeliveries = DefaultMaxRedeliveries
	}
	if len(o.DelayBuckets) == 0 {
		o.DelayBuckets = DefaultDelayBuckets
	}
	o.DelayBuckets = slices.Clone(o.DelayBuckets)
	if o.Publishers == 0 {
		o.Publishers = DefaultPublishers
	}
	if o.DeadLetterTTL == 0 {
		o.DeadLetterTTL = DefaultDeadLetterTTL
	}
	if o.DeadLetterMax == 0 {
		o.DeadLetterMax = DefaultDeadLetterMax
	}
	if o.ReconnectMin == 0 {
		o.ReconnectMin = DefaultReconnectMin
	}
	if o.ReconnectMax == 0 {
		o.ReconnectMax = DefaultReconnectMax
	}
	if o.ConnectionName == "" {
		o.ConnectionName = "sluice-amqpqueue"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Clock = clock.Or(o.Clock)
	if o.Recorder == nil {
		o.Recorder = NewMemoryRecorder(MemoryRecorderOptions{Clock: o.Clock})
	}
	return o, o.validate()
}

func (o Options) validate() error {
	checks := []struct {
		bad         bool
		field, rule string
		got         any
	}{
		{o.Prefetch < 0 || o.Prefetch > 65535, "Prefetch", "must be between 0 and 65535", o.Prefetch},
		{o.Consumers < 0 || o.Consumers > max(o.Prefetch, 1), "Consumers", "must be between 1 and Prefetch", o.Consumers},
		{o.MaxRedeliveries < 0, "MaxRedeliveries", "must not be negative", o.MaxRedeliveries},
		{o.Priorities < 0 || o.Priorities > MaxPriorities, "Priorities", fmt.Sprintf("must be between 0 and %d", MaxPriorities), o.Priorities},
		{o.Publishers < 0, "Publishers", "must not be negative", o.Publishers},
		{o.LeaseWait < 0, "LeaseWait", "must not be negative", o.LeaseWait},
		{o.DeadLetterTTL < time.Millisecond, "DeadLetterTTL", "must be at least 1ms", o.DeadLetterTTL},
		{o.DeadLetterMax < 0, "DeadLetterMax", "must not be negative", o.DeadLetterMax},
		{o.ReconnectMin <= 0 || o.ReconnectMax < o.ReconnectMin, "ReconnectMin/ReconnectMax", "must be positive with min <= max", [2]time.Duration{o.ReconnectMin, o.ReconnectMax}},
		{len(o.Prefix) > 64, "Prefix", "must be at most 64 bytes", len(o.Prefix)},
	}
	for _, c := range checks {
		if c.bad {
			return invalid("Options."+c.field, "%s, got %v", c.rule, c.got)
		}
	}
	for i, d := range o.DelayBuckets {
		if d < time.Millisecond || d%time.Millisecond != 0 || (i > 0 && d <= o.DelayBuckets[i-1]) {
			return invalid("Options.DelayBuckets", "must be ascending whole milliseconds of at least 1ms, got %v", o.DelayBuckets)
		}
	}
	if err := checkScheduler(o.Scheduler); err != nil { // scheduled.go
		return err
	}
	for _, q := range o.Queues {
		if err := checkQueueName(o.Prefix, q); err != nil {
			return err
		}
	}
	return nil
}

// invalid returns an error naming the field and the rule, matching
// queue.ErrInvalidArgument.
func invalid(field, format string, args ...any) error {
	return fmt.Errorf("amqpqueue: %s %s: %w", field, fmt.Sprintf(format, args...), queue.ErrInvalidArgument)
}
