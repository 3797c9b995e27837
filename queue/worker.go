package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue/backend"
)

// Handler runs one attempt of a job. It returns an optional result, stored
// on success, and an error: nil completes the job; Permanent(err) fails it
// for good; Snooze(d) runs it again later without spending an attempt; any
// other error fails the attempt, and the job is retried after a backoff
// while attempts remain. A panic fails the attempt with its stack.
//
// The context ends when the job is cancelled (cause ErrJobCancelled), its
// lease is lost (ErrLeaseLost), its Timeout passes (ErrJobTimeout) or the
// worker shuts down (ErrWorkerStopped); context.Cause tells which. A handler
// must return soon after: whatever it returns then is discarded (except a
// job cancelled while running, which ends cancelled).
type Handler interface {
	Work(ctx context.Context, job *Job) ([]byte, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, job *Job) ([]byte, error)

// Work calls f.
func (f HandlerFunc) Work(ctx context.Context, job *Job) ([]byte, error) { return f(ctx, job) }

// Causes of a handler's context ending.
var (
	// ErrJobCancelled: the job was cancelled while it ran.
	ErrJobCancelled = errors.New("queue: job cancelled")
	// ErrJobTimeout: the attempt ran longer than JobSpec.Timeout.
	ErrJobTimeout = errors.New("queue: job timed out")
	// ErrWorkerStopped: the worker shut down and gave the job back.
	ErrWorkerStopped = errors.New("queue: worker stopped")
)

// WorkerConfig configures a Worker. The zero value is the default.
type WorkerConfig struct {
	// Queues to lease from; default ["default"].
	Queues []string
	// Concurrency is how many handlers run at once; default 10. A slot
	// frees when its handler returns: the outcome is written while the
	// next job runs, and at most Concurrency+Prefetch outcome writes are
	// under way at once, so the store may hold up to twice
	// Concurrency+Prefetch of this worker's jobs active for a moment. The
	// writes carry BackgroundWrite's mark, so a store may send them with
	// other traffic (redisqueue.Options.CompleteLinger).
	Concurrency int
	// Prefetch is how many leased jobs beyond Concurrency the worker may
	// hold, waiting for a slot; default 0 (or negative): none, a worker
	// leases only for free slots. With short jobs a worker whose slots
	// all free at once waits a lease's round trip for the next ones; with
	// a Prefetch those are already in hand, and the lease runs while they
	// do (Celery's prefetch multiplier and RabbitMQ's prefetch count make
	// the same trade). A waiting job is held: its lease is renewed as a
	// running job's is, it counts against its tenant's limit in the
	// store, and no other worker can take it, so keep Prefetch small when
	// jobs are long. Jobs still waiting when Run's context ends go back to
	// pending at once, without spending an attempt. While busy, the worker
	// leases again once half the Prefetch (rounded up) is free, not for
	// each job that ends: fewer, larger leases, and the rest of the
	// Prefetch keeps the slots fed meanwhile.
	Prefetch int
	// LeaseFor is the lease length; default 30s. A job whose worker stops
	// renewing it is recovered by any worker once it expires.
	LeaseFor time.Duration
	// HeartbeatEvery is how often a running job's lease is renewed (and
	// its cancellation checked); default LeaseFor/3.
	HeartbeatEvery time.Duration
	// ShutdownTimeout is how long Run waits for running jobs once its
	// context ends before it cancels them and gives them back; default 10s.
	ShutdownTimeout time.Duration
	// PollInterval is how long an idle worker waits before looking for
	// work again; default 1s. Backends that implement Notifier wake it
	// sooner when jobs are enqueued in the same process.
	PollInterval time.Duration
	// LeaseCooldown is the least time between two leases of this worker
	// after one that left slots free; default 0 (or negative), none: an idle worker
	// leases as soon as work is announced, which starts a job within a
	// millisecond or two. A positive value gathers the work that arrives
	// meanwhile into one lease, and the jobs' completions into one write,
	// for up to LeaseCooldown more latency before a job starts: fewer
	// store calls per job at ordinary rates (asynq's TaskCheckInterval
	// and River's FetchCooldown make the same trade). A lease that fills
	// every free slot is followed at once, so the cooldown never limits
	// throughput under load.
	LeaseCooldown time.Duration
	// Backoff is the delay before retrying after a failed attempt
	// (attempt counts from 1); default DefaultBackoff.
	Backoff func(attempt int, err error) time.Duration
	// MaxStalls is how many expired leases a job survives before it fails;
	// default 10.
	MaxStalls int
	// RescueEvery is how often this worker looks for expired leases in its
	// queues; default LeaseFor/2.
	RescueEvery time.Duration
	// Retention says how long finished jobs of its queues are kept; zero
	// fields are the defaults (see Retention).
	Retention Retention
	// CleanupEvery is how often this worker deletes finished jobs past
	// their retention; default 1 minute. A negative value disables the
	// cleaner in this worker (run a Cleaner elsewhere).
	CleanupEvery time.Duration
	// MaxResult bounds a handler's result in bytes; a bigger one fails the
	// job for good. Default DefaultMaxPayload (1 MiB).
	MaxResult int
	// ID names the worker on the jobs it holds; default host-pid-random.
	ID string
	// Clock drives timers (heartbeats, polling, timeouts); default the
	// real clock.
	Clock clock.Clock
	// Logger receives backend faults and handler failures; default
	// slog.Default().
	Logger *slog.Logger
	// Monitor, when set, stops the worker leasing new jobs while it
	// reports overload, until it no longer does; running jobs go on and
	// keep their leases. Default none.
	Monitor LoadMonitor
	// OnOverload, when set, is called each time the worker stops or
	// resumes leasing because of Monitor (see Worker.Overloaded), from
	// its lease loop: it must not block.
	OnOverload func(overloaded bool, reason string)
	// StartRates limits how fast jobs start per tenant, group or queue;
	// a job over its rate waits (see StartRates). Default none.
	StartRates StartRates
	// Budgets makes jobs wait for shared budgets before they start, after
	// their start rates; a job held waits without spending an attempt
	// (see JobBudgets). Default none.
	Budgets JobBudgets
	// TracerProvider, when set, traces each attempt (lease, the
	// handler's work, its complete or fail) in the trace of the call
	// that enqueued the job (JobSpec.Trace); the handler's ctx carries
	// the work span. Default nil: no spans and no cost.
	TracerProvider trace.TracerProvider
}

func (c WorkerConfig) withDefaults() WorkerConfig {
	if len(c.Queues) == 0 {
		c.Queues = []string{"default"}
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 10
	}
	c.Prefetch = max(c.Prefetch, 0)
	if c.LeaseFor <= 0 {
		c.LeaseFor = 30 * time.Second
	}
	if c.HeartbeatEvery <= 0 {
		c.HeartbeatEvery = c.LeaseFor / 3
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = 10 * time.Second
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.Backoff == nil {
		c.Backoff = DefaultBackoff
	}
	if c.MaxStalls <= 0 {
		c.MaxStalls = DefaultMaxStalls
	}
	if c.RescueEvery <= 0 {
		c.RescueEvery = c.LeaseFor / 2
	}
	c.Retention = c.Retention.WithDefaults()
	if c.CleanupEvery == 0 {
		c.CleanupEvery = time.Minute
	}
	if c.MaxResult <= 0 {
		c.MaxResult = DefaultMaxPayload
	}
	if c.ID == "" {
		c.ID = defaultWorkerID()
	}
	c.Clock = clock.Or(c.Clock)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func defaultWorkerID() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Worker leases jobs from its queues and runs their handlers. Register
// handlers with Handle before Run.
type Worker struct {
	b   backend.Backend
	cfg WorkerConfig

	mu       sync.RWMutex
	handlers map[string]Handler
	running  atomic.Bool
	load     loadGate
	faults   faultLog // rate-limits the logs of outcome writes being retried
	tr       *tracer  // nil when tracing is off
}

// NewWorker returns a worker on b.
func NewWorker(b backend.Backend, cfg WorkerConfig) *Worker {
	return &Worker{b: b, cfg: cfg.withDefaults(), handlers: map[string]Handler{}, tr: newTracer(cfg.TracerProvider)}
}

// ID returns the worker's id, as recorded on the jobs it holds.
func (w *Worker) ID() string { return w.cfg.ID }

// Handle registers h for jobs of kind, replacing any earlier one. A job
// whose kind has no handler fails its attempt (another worker may have one).
func (w *Worker) Handle(kind string, h Handler) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.handlers[kind] = h
}

func (w *Worker) handler(kind string) Handler {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.handlers[kind]
}

// Run leases and runs jobs until ctx ends, then shuts down gracefully: it
// stops leasing, waits up to ShutdownTimeout for running jobs to finish,
// then cancels the rest (cause ErrWorkerStopped) and puts them straight
// back to pending without spending an attempt. It then waits for their
// handlers to return, at most another ShutdownTimeout (a handler that
// ignores its context is abandoned; its job is already back in the queue).
// A lease call under way when ctx ends may take up to 5 s more to return
// (a store runs it to the end even if its caller gives up); the jobs it
// hands over go straight back to pending, so none is left active with no
// one to run it until its lease expires.
//
// A job's outcome (completed, failed, snoozed) is written with one fenced
// call; when that call fails on a store fault, the worker tries it again
// with backoff (100 ms doubling to 2 s, with jitter) until it lands, until
// the store answers that the lease is gone (ErrLeaseLost, ErrNotFound, or
// the backend closed), or until the lease's deadline, since after it the
// job may be rescued; the handler is not run again meanwhile, and the job
// keeps its slot. A job whose outcome is still being retried counts as
// running at shutdown: the retries go on through the grace period and the
// second ShutdownTimeout, then stop. A job whose outcome could not be
// written stays active and is rescued, and run again, once its lease
// expires. Retries are logged at most once per 5 s per worker.
//
// Alongside, it recovers expired leases in its queues (RescueEvery) and
// deletes finished jobs past their retention (CleanupEvery). Backend
// faults are logged and retried, never fatal. Run returns nil after a
// graceful stop, or an error at once if the worker has no handler, is
// already running, or has a start rate that is set but invalid (an
// *InvalidArgumentError naming it, see StartRates.Validate).
func (w *Worker) Run(ctx context.Context) error {
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("queue: worker is already running")
	}
	defer w.running.Store(false)
	w.mu.RLock()
	n := len(w.handlers)
	w.mu.RUnlock()
	if n == 0 {
		return errors.New("queue: worker has no handlers (call Handle before Run)")
	}
	// A start rate the store refuses would let every job run unchecked.
	if err := w.cfg.StartRates.Validate(); err != nil {
		return err
	}
	r := newRun(w)
	var bg sync.WaitGroup
	bg.Add(1)
	go func() { defer bg.Done(); w.maintain(ctx) }()
	r.fetchLoop(ctx)
	r.shutdown()
	bg.Wait()
	return nil
}
