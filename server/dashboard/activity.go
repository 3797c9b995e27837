package dashboard

import (
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/ratelimit"
)

// ActivityOptions configures an Activity. The zero value is the default.
type ActivityOptions struct {
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Window is how much history is kept, in whole seconds; default 60s.
	Window time.Duration
	// LatencyWindow is how far back each point of the start-latency
	// series looks; default 10s. One second holds too few starts for a
	// useful p99.
	LatencyWindow time.Duration
}

// Activity keeps the last minute of what the server did, one slot per
// second, in memory: rate-limit decisions per scene and policy, and job
// enqueues, starts, ends and start delays per queue. It is what the
// dashboard's live charts are drawn from (GET /v1/activity/limits and
// /v1/activity/queues); Prometheus keeps the long history.
//
// Memory is bounded by the configured scenes and policies and the queues
// in use (a fixed ring per name); nothing is keyed by subject or job. An
// Activity is safe for concurrent use, and a nil *Activity records
// nothing, so callers need not check.
type Activity struct {
	now     func() time.Time
	n       int
	latency int
	started time.Time

	mu     sync.Mutex
	limits map[limitKey]*limitTrack
	queues map[string]*queueTrack
}

// NewActivity returns an empty Activity.
func NewActivity(opts ActivityOptions) *Activity {
	a := &Activity{now: opts.Now, n: int(opts.Window / time.Second), latency: int(opts.LatencyWindow / time.Second)}
	if a.now == nil {
		a.now = time.Now
	}
	if a.n <= 0 {
		a.n = 60
	}
	if a.latency <= 0 {
		a.latency = 10
	}
	a.started = a.now()
	a.limits = map[limitKey]*limitTrack{}
	a.queues = map[string]*queueTrack{}
	return a
}

type limitKey struct{ scene, policy string }

// LimitCounts counts rate-limit decisions by outcome.
type LimitCounts struct {
	// Allowed decisions, including those a failure mode allowed.
	Allowed int64 `json:"allowed"`
	// Denied decisions (429 answers), including those a fail-closed
	// failure mode denied.
	Denied int64 `json:"denied"`
	// ShadowDenied decisions were over the limit in a shadow-mode scene
	// and answered as allowed.
	ShadowDenied int64 `json:"shadow_denied"`
	// StoreErrors are decisions whose store call failed.
	StoreErrors int64 `json:"store_errors"`
	// FailureOpen and FailureClosed are decisions the failure mode
	// answered because the store failed.
	FailureOpen   int64 `json:"failure_open"`
	FailureClosed int64 `json:"failure_closed"`
	// Invalid decisions were refused for a bad argument.
	Invalid int64 `json:"invalid"`
}

func (c *LimitCounts) add(o *LimitCounts) {
	c.Allowed += o.Allowed
	c.Denied += o.Denied
	c.ShadowDenied += o.ShadowDenied
	c.StoreErrors += o.StoreErrors
	c.FailureOpen += o.FailureOpen
	c.FailureClosed += o.FailureClosed
	c.Invalid += o.Invalid
}

// classify turns one decision event into counts.
func classify(ev ratelimit.Event) LimitCounts {
	var c LimitCounts
	if ev.Err != nil && errors.Is(ev.Err, ratelimit.ErrInvalidArgument) {
		c.Invalid = 1
		return c
	}
	if ev.Err != nil || ev.FailureModeApplied {
		c.StoreErrors = 1
	}
	switch {
	case ev.FailureModeApplied && ev.Allowed:
		c.FailureOpen = 1
	case ev.FailureModeApplied:
		c.FailureClosed = 1
	case ev.Allowed && !ev.Decision.Allowed && ev.Err == nil:
		c.ShadowDenied = 1
	}
	if ev.Allowed {
		c.Allowed = 1
	} else {
		c.Denied = 1
	}
	return c
}

type limitTrack struct {
	total LimitCounts
	secs  *ring[LimitCounts]
}

// ObserveLimit records one decision. Its signature is a ratelimit.Observer.
func (a *Activity) ObserveLimit(ev ratelimit.Event) {
	if a == nil || ev.Release { // a lease given back is not a decision
		return
	}
	c := classify(ev)
	sec := a.now().Unix()
	a.mu.Lock()
	defer a.mu.Unlock()
	k := limitKey{ev.Scene, ev.Policy}
	t := a.limits[k]
	if t == nil {
		t = &limitTrack{secs: newRing(a.n, func(c *LimitCounts) { *c = LimitCounts{} })}
		a.limits[k] = t
	}
	t.total.add(&c)
	t.secs.at(sec).add(&c)
}

// JobCounts counts job events of one queue.
type JobCounts struct {
	// Enqueued jobs (not counting duplicates of a unique key).
	Enqueued int64 `json:"enqueued"`
	// Started attempts: jobs handed to a worker.
	Started int64 `json:"started"`
	// Completed, Failed and Cancelled jobs ended for good; Retried
	// attempts failed with attempts left.
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
	Cancelled int64 `json:"cancelled"`
	Retried   int64 `json:"retried"`
}

func (c *JobCounts) add(o *JobCounts) {
	c.Enqueued += o.Enqueued
	c.Started += o.Started
	c.Completed += o.Completed
	c.Failed += o.Failed
	c.Cancelled += o.Cancelled
	c.Retried += o.Retried
}

type queueSlot struct {
	JobCounts
	delay hist
}

type queueTrack struct {
	total JobCounts
	secs  *ring[queueSlot]
}

func (a *Activity) queue(name string) *queueTrack {
	t := a.queues[name]
	if t == nil {
		// The ring reaches LatencyWindow further back, so the oldest point's
		// latency window is complete too.
		t = &queueTrack{secs: newRing(a.n+a.latency, func(s *queueSlot) { s.JobCounts = JobCounts{}; s.delay.reset() })}
		a.queues[name] = t
	}
	return t
}

func (a *Activity) record(q string, c JobCounts, delay time.Duration, hasDelay bool) {
	if a == nil {
		return
	}
	sec := a.now().Unix()
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.queue(q)
	t.total.add(&c)
	s := t.secs.at(sec)
	s.add(&c)
	if hasDelay {
		s.delay.add(max(delay, 0))
	}
}

// JobEnqueued records n new jobs in queue q.
func (a *Activity) JobEnqueued(q string, n int) {
	a.record(q, JobCounts{Enqueued: int64(n)}, 0, false)
}

// JobStarted records a job handed to a worker after waiting delay since
// it was due (enqueued, or its run_at).
func (a *Activity) JobStarted(q string, delay time.Duration) {
	a.record(q, JobCounts{Started: 1}, delay, true)
}

// JobEnded records the end of an attempt of a job in queue q, by the
// state it moved to: completed, failed, cancelled or retrying (others are
// ignored).
func (a *Activity) JobEnded(q string, st queue.State) {
	var c JobCounts
	switch st {
	case queue.StateCompleted:
		c.Completed = 1
	case queue.StateFailed:
		c.Failed = 1
	case queue.StateCancelled:
		c.Cancelled = 1
	case queue.StateRetrying:
		c.Retried = 1
	default:
		return
	}
	a.record(q, c, 0, false)
}

// seconds returns the seconds covered by a report ending now, oldest first.
func (a *Activity) seconds() (first, last int64) {
	last = a.now().Unix()
	return last - int64(a.n) + 1, last
}

func sortedKeys[K comparable, V any](m map[K]V, less func(a, b K) bool) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out
}
