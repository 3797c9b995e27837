package queue

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetype"
)

// LoadMonitor says whether the machine is overloaded, and why (such as
// "cpu 93% (threshold 80%)"). *overload.Monitor implements it. It is called
// on every enqueue and every lease round, so it must answer from memory,
// without blocking.
type LoadMonitor interface {
	Overloaded() (overloaded bool, reason string)
}

// ErrOverloaded is matched by *OverloadedError.
var ErrOverloaded = errors.New("queue: overloaded")

// OverloadedError means an enqueue was refused to protect the system: the
// load monitor reports overload, a queue is at its depth cap, or a
// tenant's backlog is full. Nothing was stored; the same call may succeed
// after RetryAfter. A server answers it with 503 Service Unavailable and a
// Retry-After header.
type OverloadedError struct {
	// Reason says what is over its limit, such as "queue mail is over its
	// depth cap: 1000 jobs waiting + 1 > cap 1000".
	Reason string
	// After is how long to wait before trying again.
	After time.Duration
	// Err is the backend's refusal it stands for, if any: a
	// *BacklogFullError, so that errors.Is(err, ErrBacklogFull) holds too.
	Err error
}

// Unwrap returns Err.
func (e *OverloadedError) Unwrap() error { return e.Err }

func (e *OverloadedError) Error() string { return "queue: overloaded: " + e.Reason }

// Is makes errors.Is(err, ErrOverloaded) true.
func (e *OverloadedError) Is(target error) bool { return target == ErrOverloaded }

// RetryAfter returns After. The method is the shape retry helpers and the
// server look for (flow.Retry waits that long).
func (e *OverloadedError) RetryAfter() time.Duration { return e.After }

// Defaults of Admission.
const (
	DefaultDepthCacheFor      = time.Second
	DefaultOverloadRetryAfter = 5 * time.Second
)

// Admission configures the checks Client.Enqueue and EnqueueBatch make
// before they store anything; a refused call returns an *OverloadedError.
// The zero value admits everything. (A tenant's backlog cap is the
// backend's, see TenantConfig.Backlog; the client reports its refusal as
// an *OverloadedError too.)
type Admission struct {
	// MaxDepth caps how many jobs of one queue may wait to run (scheduled,
	// pending, waiting and retrying; active and finished jobs do not
	// count); 0 (default) means no cap. A batch is refused whole when it
	// would take a queue over its cap.
	MaxDepth int64
	// QueueMaxDepth overrides MaxDepth for the named queues; a negative
	// value lifts the cap for that queue, 0 leaves it at MaxDepth.
	QueueMaxDepth map[string]int64
	// DepthCacheFor is how long depths read through Backend.Stats are
	// reused, so that enqueues do not count jobs every time; default 1s.
	// The client adds the jobs it admits to the cached figures, so its own
	// enqueues, concurrent or not, never take a queue past its cap; what
	// other clients enqueue meanwhile is seen at the next read, so across
	// clients the cap is soft by that much.
	DepthCacheFor time.Duration
	// Monitor, when set, refuses every enqueue while it reports overload;
	// default none.
	Monitor LoadMonitor
	// RetryAfter is the wait an *OverloadedError suggests; default 5s.
	RetryAfter time.Duration
	// Clock dates the depth cache; default the real clock.
	Clock clock.Clock
}

// admission applies an Admission for one Client.
type admission struct {
	cfg Admission

	mu    sync.Mutex // guards the cache, held across a refresh
	at    time.Time
	gen   uint64           // counts refreshes
	cache map[string]int64 // depth per queue, nil until read
}

// reservation is what admit added to the cached depths for one call.
type reservation struct {
	gen uint64
	n   map[string]int64
}

func newAdmission(cfg Admission) *admission {
	if cfg.DepthCacheFor <= 0 {
		cfg.DepthCacheFor = DefaultDepthCacheFor
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = DefaultOverloadRetryAfter
	}
	cfg.Clock = clock.Or(cfg.Clock)
	return &admission{cfg: cfg}
}

// depthCap returns the cap of queue q, or 0 for none.
func (a *admission) depthCap(q string) int64 {
	if c := a.cfg.QueueMaxDepth[q]; c != 0 {
		return max(c, 0)
	}
	return max(a.cfg.MaxDepth, 0)
}

// admit returns an *OverloadedError, an *InvalidArgumentError for a batch
// bigger than a cap, or a Stats fault. When it admits specs it counts them
// in the cached depths at once (so that concurrent calls of this client
// cannot all pass the same last free place), and the caller settles the
// reservation once the backend has answered.
func (a *admission) admit(ctx context.Context, b backend.Backend, specs []JobSpec) (*reservation, error) {
	if a == nil { // a Client not made by NewClient
		return nil, nil
	}
	if m := a.cfg.Monitor; m != nil {
		if over, why := m.Overloaded(); over {
			if why == "" {
				why = "the system is overloaded"
			}
			return nil, &OverloadedError{Reason: why, After: a.cfg.RetryAfter}
		}
	}
	adding := a.capped(specs)
	queues := sortedKeys(adding)
	for _, q := range queues {
		if limit := a.depthCap(q); adding[q] > limit {
			return nil, queuetype.InvalidArgument(Field("", "specs"), "hold %d jobs for queue %s, more than its depth cap %d", adding[q], q, limit)
		}
	}
	if len(queues) == 0 {
		return nil, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.refreshLocked(ctx, b); err != nil {
		return nil, err
	}
	for _, q := range queues {
		if limit, d := a.depthCap(q), a.cache[q]; d+adding[q] > limit {
			return nil, &OverloadedError{After: a.cfg.RetryAfter,
				Reason: fmt.Sprintf("queue %s is over its depth cap: %d jobs waiting + %d > cap %d", q, d, adding[q], limit)}
		}
	}
	for _, q := range queues {
		a.cache[q] += adding[q]
	}
	return &reservation{gen: a.gen, n: adding}, nil
}

// refusal returns a backend's Enqueue error, a full tenant backlog made an
// *OverloadedError (wrapping it) so that callers see every overload the
// same way.
func (a *admission) refusal(err error) error {
	var full *BacklogFullError
	if a == nil || !errors.As(err, &full) {
		return err
	}
	return &OverloadedError{Reason: strings.TrimPrefix(full.Error(), "queue: "), After: a.cfg.RetryAfter, Err: err}
}

// capped counts specs per queue, for queues that have a cap.
func (a *admission) capped(specs []JobSpec) map[string]int64 {
	var n map[string]int64
	for _, s := range specs {
		if a.depthCap(s.Queue) > 0 {
			if n == nil {
				n = map[string]int64{}
			}
			n[s.Queue]++
		}
	}
	return n
}

// refreshLocked reads the depth of every queue again when the cached
// figures are older than DepthCacheFor.
func (a *admission) refreshLocked(ctx context.Context, b backend.Backend) error {
	now := a.cfg.Clock.Now()
	if a.cache != nil && now.Sub(a.at) < a.cfg.DepthCacheFor {
		return nil
	}
	stats, err := b.Stats(ctx)
	if err != nil {
		return fmt.Errorf("queue: reading queue depths for admission: %w", err)
	}
	d := make(map[string]int64, len(stats))
	for _, s := range stats {
		d[s.Queue] = s.Counts[StateScheduled] + s.Counts[StatePending] + s.Counts[StateWaiting] + s.Counts[StateRetrying]
	}
	a.cache, a.at = d, now
	a.gen++
	return nil
}

// settle takes back what a reservation counted but the backend did not
// store: everything when the enqueue failed, duplicates otherwise. After a
// refresh the figures come from the store, and there is nothing to undo.
func (a *admission) settle(r *reservation, specs []JobSpec, res []Enqueued, err error) {
	if r == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.gen != a.gen {
		return
	}
	if err != nil || len(res) != len(specs) {
		for q, n := range r.n {
			a.cache[q] -= n
		}
		return
	}
	for i, s := range specs {
		if res[i].Duplicate && r.n[s.Queue] > 0 {
			a.cache[s.Queue]--
		}
	}
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// loadGate is a worker's overload state, as of its last lease round.
type loadGate struct {
	mu     sync.Mutex
	paused bool
	reason string
}

// Overloaded reports whether the worker has stopped leasing new jobs
// because its Monitor reports overload, and why. It is always false for a
// worker without a Monitor.
func (w *Worker) Overloaded() (bool, string) {
	w.load.mu.Lock()
	defer w.load.mu.Unlock()
	return w.load.paused, w.load.reason
}

// holdLeasing asks the monitor whether to lease this round, and logs and
// reports the transitions (once each, not every round).
func (w *Worker) holdLeasing() bool {
	m := w.cfg.Monitor
	if m == nil {
		return false
	}
	over, why := m.Overloaded()
	if !over {
		why = ""
	}
	g := &w.load
	g.mu.Lock()
	changed := over != g.paused
	g.paused, g.reason = over, why
	g.mu.Unlock()
	if !changed {
		return over
	}
	if over {
		w.cfg.Logger.Warn("queue: overloaded; not leasing new jobs", "worker", w.cfg.ID, "reason", why)
	} else {
		w.cfg.Logger.Info("queue: load fell; leasing again", "worker", w.cfg.ID)
	}
	if f := w.cfg.OnOverload; f != nil {
		f(over, why)
	}
	return over
}
