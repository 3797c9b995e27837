package config

import (
	"errors"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/ratelimit"
)

// QueueSettings holds the settings of one queue (queues.per_queue.NAME).
// A zero field follows the queues-wide value (queues.lease,
// queues.max_attempts, ...).
type QueueSettings struct {
	// Lease is the default lease of the queue's jobs in the worker
	// protocol (a lease call or heartbeat without lease_ms).
	Lease Duration `yaml:"lease"`
	// MaxAttempts is the attempts of a job enqueued without
	// max_attempts, 1 to 1000.
	MaxAttempts int `yaml:"max_attempts"`
	// MaxStalls is how many expired leases a job survives before it
	// fails.
	MaxStalls int `yaml:"max_stalls"`
	// Backoff is the retry delay of a failed attempt that names none.
	Backoff Backoff `yaml:"backoff"`
	// Retention bounds how long the queue's finished jobs are kept.
	Retention Retention `yaml:"retention"`
	// MaxDepth caps the queue's waiting jobs; -1 lifts queues.max_depth
	// for this queue.
	MaxDepth int64 `yaml:"max_depth"`
	// Aging is the queue's aging step, in rounds of the fair rotation: a
	// ready job gains one priority level every Aging rounds it waits, so
	// low priorities never starve. 0 (default): strict priority order.
	Aging int `yaml:"aging"`
}

// Backoff is an exponential retry delay: Base·2^(attempt−1), capped at
// Max, with equal jitter (queue.ExponentialBackoff).
type Backoff struct {
	// Base is the delay after the first failed attempt; default 1s.
	Base Duration `yaml:"base"`
	// Max caps the delay; default 1h.
	Max Duration `yaml:"max"`
}

// Defaults of the queue settings.
const (
	DefaultBackoffBase  = time.Second
	DefaultBackoffMax   = time.Hour
	DefaultRescueEvery  = time.Second
	DefaultCleanupEvery = time.Minute
)

// Cleanup configures the deletion of finished jobs past their retention.
type Cleanup struct {
	// Interval is the time between rounds; default 1m.
	Interval Duration `yaml:"interval"`
	// Batch is how many jobs one store call deletes at most; default
	// 1000.
	Batch int `yaml:"batch"`
}

// AdmissionSettings tunes the enqueue checks (queues.max_depth, the
// overload monitor).
type AdmissionSettings struct {
	// DepthCacheFor is how long queue depths read for max_depth are
	// reused; default 1s.
	DepthCacheFor Duration `yaml:"depth_cache_for"`
	// RetryAfter is the Retry-After of a refused enqueue; default 5s.
	RetryAfter Duration `yaml:"retry_after"`
}

// GroupDefaults fills the fields a POST /v1/groups leaves zero.
type GroupDefaults struct {
	// MaxConcurrency is how many of a group's jobs may be active at once;
	// 0 (default): no limit.
	MaxConcurrency int `yaml:"max_concurrency"`
	// MinInterval is the least time between two starts of a group's jobs
	// (a crawl delay); 0 (default): none.
	MinInterval Duration `yaml:"min_interval"`
	// TTL bounds a group's life; 0 (default): no bound.
	TTL Duration `yaml:"ttl"`
	// CompletionQueue is the queue of a group's completion job; default
	// "default".
	CompletionQueue string `yaml:"completion_queue"`
}

// StartRates limits how fast jobs start, per tenant, group and queue
// (queue.StartRates), counted in the rate-limit store. A zero limit is no
// limit; a map entry overrides the default for one name, and an empty
// entry ({}) lifts it.
type StartRates struct {
	// Tenant is the start rate of every tenant; Tenants overrides it.
	Tenant  Limit            `yaml:"tenant"`
	Tenants map[string]Limit `yaml:"tenants"`
	// Group is the start rate of every group; Groups overrides it.
	Group  Limit            `yaml:"group"`
	Groups map[string]Limit `yaml:"groups"`
	// Queue is the start rate of every queue; Queues overrides it.
	Queue  Limit            `yaml:"queue"`
	Queues map[string]Limit `yaml:"queues"`
}

// Set reports whether any start rate is configured.
func (r StartRates) Set() bool {
	return r.Tenant != (Limit{}) || r.Group != (Limit{}) || r.Queue != (Limit{}) ||
		len(r.Tenants) > 0 || len(r.Groups) > 0 || len(r.Queues) > 0
}

// Library returns r as a queue.StartRates counting in store; call it on a
// validated Config.
func (r StartRates) Library(store ratelimit.Store) queue.StartRates {
	conv := func(m map[string]Limit) map[string]ratelimit.Limit {
		if len(m) == 0 {
			return nil
		}
		out := make(map[string]ratelimit.Limit, len(m))
		for k, l := range m {
			out[k] = l.startLimit()
		}
		return out
	}
	return queue.StartRates{
		Store:  store,
		Tenant: r.Tenant.startLimit(), Tenants: conv(r.Tenants),
		Group: r.Group.startLimit(), Groups: conv(r.Groups),
		Queue: r.Queue.startLimit(), Queues: conv(r.Queues),
	}
}

// startLimit converts l, keeping the zero Limit zero (no limit).
func (l Limit) startLimit() ratelimit.Limit {
	if l == (Limit{}) {
		return ratelimit.Limit{}
	}
	return l.Limit()
}

// Effective is the settings of one queue after the queues-wide values and
// the built-in defaults are applied.
type Effective struct {
	Lease       time.Duration
	MaxAttempts int
	MaxStalls   int
	Backoff     func(attempt int, err error) time.Duration
	BackoffBase time.Duration
	BackoffMax  time.Duration
	Retention   queue.Retention
	Aging       int
}

// For returns the effective settings of queue name.
func (q *Queues) For(name string) Effective {
	own := q.PerQueue[name]
	e := Effective{
		Lease:       pickDuration(own.Lease, q.Lease, 30*time.Second),
		MaxAttempts: pickInt(own.MaxAttempts, q.MaxAttempts, queue.DefaultMaxAttempts),
		MaxStalls:   pickInt(own.MaxStalls, q.MaxStalls, queue.DefaultMaxStalls),
		BackoffBase: pickDuration(own.Backoff.Base, q.Backoff.Base, DefaultBackoffBase),
		BackoffMax:  pickDuration(own.Backoff.Max, q.Backoff.Max, DefaultBackoffMax),
		Aging:       own.Aging,
	}
	e.Backoff = queue.ExponentialBackoff(e.BackoffBase, e.BackoffMax)
	e.Retention = queue.Retention{
		Completed: pickDuration(own.Retention.Completed, q.Retention.Completed, queue.DefaultRetainCompleted),
		Failed:    pickDuration(own.Retention.Failed, q.Retention.Failed, queue.DefaultRetainFailed),
		Cancelled: pickDuration(own.Retention.Cancelled, q.Retention.Cancelled, queue.DefaultRetainCancelled),
	}
	return e
}

// QueueMaxDepth returns the per-queue depth caps, for queue.Admission.
func (q *Queues) QueueMaxDepth() map[string]int64 {
	var out map[string]int64
	for name, s := range q.PerQueue {
		if s.MaxDepth != 0 {
			if out == nil {
				out = map[string]int64{}
			}
			out[name] = s.MaxDepth
		}
	}
	return out
}

func pickDuration(own, all Duration, builtin time.Duration) time.Duration {
	switch {
	case own != 0:
		return own.D()
	case all != 0:
		return all.D()
	}
	return builtin
}

func pickInt(own, all, builtin int) int {
	switch {
	case own != 0:
		return own
	case all != 0:
		return all
	}
	return builtin
}

func (v *validator) queueSettings(q *Queues) {
	base := []any{"queues"}
	v.attempts(p(base, "max_attempts"), q.MaxAttempts)
	v.nonNegative(p(base, "max_stalls"), int64(q.MaxStalls))
	v.backoff(p(base, "backoff"), q.Backoff)
	v.nonNegativeDuration(p(base, "rescue_every"), q.RescueEvery)
	v.nonNegativeDuration(p(base, "cleanup", "interval"), q.Cleanup.Interval)
	v.nonNegative(p(base, "cleanup", "batch"), int64(q.Cleanup.Batch))
	v.nonNegativeDuration(p(base, "admission", "depth_cache_for"), q.Admission.DepthCacheFor)
	v.nonNegativeDuration(p(base, "admission", "retry_after"), q.Admission.RetryAfter)
	g := q.Groups
	v.nonNegative(p(base, "groups", "max_concurrency"), int64(g.MaxConcurrency))
	v.nonNegativeDuration(p(base, "groups", "min_interval"), g.MinInterval)
	v.nonNegativeDuration(p(base, "groups", "ttl"), g.TTL)
	v.queueName(p(base, "groups", "completion_queue"), g.CompletionQueue)
	for _, name := range sortedKeys(q.PerQueue) {
		v.perQueue(p(base, "per_queue", name), name, q.PerQueue[name])
	}
	v.startRates(p(base, "start_rates"), q.StartRates)
}

func (v *validator) perQueue(base []any, name string, s QueueSettings) {
	if name == "" {
		v.add(base, "a queue name must not be empty")
	}
	v.queueName(base, name)
	v.nonNegativeDuration(p(base, "lease"), s.Lease)
	v.attempts(p(base, "max_attempts"), s.MaxAttempts)
	v.nonNegative(p(base, "max_stalls"), int64(s.MaxStalls))
	v.backoff(p(base, "backoff"), s.Backoff)
	v.atLeastUnlimited(p(base, "max_depth"), s.MaxDepth)
	if s.Aging < 0 || s.Aging > queue.MaxAgingStep {
		v.add(p(base, "aging"), "must be from 0 (off) to %d, got %d", queue.MaxAgingStep, s.Aging)
	}
}

// queueName checks a queue name the way the queue does; it returns true
// when it added a problem.
func (v *validator) queueName(path []any, name string) bool {
	if name == "" {
		return false
	}
	err := queue.ValidateSpec(queue.JobSpec{Queue: name, Kind: "k"}, 0)
	var ia *queue.InvalidArgumentError
	if errors.As(err, &ia) {
		v.add(path, "queue name %s", ia.Rule)
		return true
	}
	return false
}

func (v *validator) attempts(path []any, n int) {
	if n < 0 || n > queue.MaxAttemptsLimit {
		v.add(path, "must be from 0 (default %d) to %d, got %d", queue.DefaultMaxAttempts, queue.MaxAttemptsLimit, n)
	}
}

func (v *validator) backoff(base []any, b Backoff) {
	v.nonNegativeDuration(p(base, "base"), b.Base)
	v.nonNegativeDuration(p(base, "max"), b.Max)
	if b.Base > 0 && b.Max > 0 && b.Max < b.Base {
		v.add(p(base, "max"), "must be at least base (%s), got %s", b.Base, b.Max)
	}
}

func (v *validator) startRates(base []any, r StartRates) {
	for _, c := range []struct {
		name string
		def  Limit
		per  map[string]Limit
	}{{"tenant", r.Tenant, r.Tenants}, {"group", r.Group, r.Groups}, {"queue", r.Queue, r.Queues}} {
		v.startLimit(p(base, c.name), c.def)
		for _, k := range sortedKeys(c.per) {
			v.startLimit(p(base, c.name+"s", k), c.per[k])
		}
	}
}

// startLimit checks a start rate; the zero Limit means none.
func (v *validator) startLimit(path []any, l Limit) {
	if l == (Limit{}) {
		return
	}
	v.limit(path, l)
}
