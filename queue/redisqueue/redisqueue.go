package redisqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// Defaults of Options.
const (
	DefaultMaxBatch = 256
	DefaultSenders  = 2
	// DefaultCompleteLinger is Options.CompleteLinger's default.
	DefaultCompleteLinger = 2 * time.Millisecond
	// promoteLimit bounds how many due jobs per index one Lease promotes;
	// the rest follow on the next call.
	promoteLimit = 1000
	// maxLease bounds the jobs one Lease call hands out.
	maxLease = 1000
)

// Options configures a Backend. The zero value is ready to use.
type Options struct {
	// Prefix is put before every key. The zero value means
	// keyspace.DefaultPrefix ("sluice:"). Give each deployment sharing a
	// Redis its own prefix.
	Prefix keyspace.Prefix

	// Clock, when set, supplies the time sent to every script instead of
	// Redis TIME. It exists for tests that move time with a fake clock;
	// leave it nil in production so all processes use the server's clock.
	Clock clock.Clock

	// Logger receives the start-up warning about maxmemory-policy and
	// notification faults. Default slog.Default().
	Logger *slog.Logger

	// DisableBatching sends every call as its own round trip instead of
	// gathering concurrent calls into pipelines. Default false (batching).
	DisableBatching bool
	// MaxBatch caps the calls in one pipeline; 0 means DefaultMaxBatch (256).
	MaxBatch int
	// Senders is how many pipelines may be in flight at once; 0 means
	// DefaultSenders (2). Calls beyond wait and go out together in the
	// next pipeline.
	Senders int
	// CompleteLinger is how long a worker's completion of a job (a
	// Complete whose context is queue.BackgroundWrite's) may wait to go
	// out in one round trip with other calls of this Backend: the next
	// lease, an enqueue, other completions. A job arriving every few
	// milliseconds then costs Redis and this process two round trips
	// instead of three; the job's slot is free meanwhile, only its
	// completed state shows that much later. 0 means
	// DefaultCompleteLinger (2ms); negative, or DisableBatching, sends
	// completions at once.
	CompleteLinger time.Duration
	// EnqueueLinger is how long an Enqueue may wait for other enqueues
	// into the same queue, made through this Backend, to run with it as
	// one script. Default 0 (or negative): none, a call goes at once, or
	// with the calls already waiting. A positive value trades up to that
	// much enqueue latency for fewer script runs when jobs come one call
	// at a time at an ordinary rate, as Kafka's linger.ms does: at 1,000
	// jobs/s, with a 10 ms LeaseCooldown, 2 ms takes a job's script runs
	// from 1.2 to 0.57 (docs/benchmarks.md). It pairs with a worker's
	// queue.WorkerConfig.LeaseCooldown, whose jobs start up to that much
	// later anyway. Calls that cannot share a run (several queues, or a
	// tenant or group under a scheduler prefix) never wait. A caller whose
	// ctx ends while its call waits gets ctx's error, and its jobs may
	// still be stored, as with any call waiting for the batcher. No effect
	// with DisableBatching.
	EnqueueLinger time.Duration

	// Outbox records an event (queue.Event) in the same script as every
	// job transition to a final state, for a consumer such as
	// queue/webhook's Dispatcher to deliver (see backend.Outbox and the
	// package doc). Default off: with no consumer the outbox would only
	// grow. Every process sharing the Redis and prefix must use the same
	// setting, or the transitions of the others record nothing. Not
	// supported on a Redis Cluster client: New refuses it there, because
	// the outbox's keys are global, not in any queue's slot.
	Outbox bool

	// Events keeps the event log (backend.EventLog), a stream written in
	// the same script as every new job, start, progress report, final
	// state and group completion, for Client.Subscribe and Client.Wait
	// to follow (XREAD BLOCK wakes them). Default off. Like Outbox, every
	// process sharing the Redis and prefix must use the same setting; not
	// supported on a Redis Cluster client.
	Events bool
	// EventsMaxLen bounds the event log's length (approximately: Redis
	// trims whole nodes); default 100000 events. PruneEvents also trims
	// it by age.
	EventsMaxLen int

	// DisableBreaker keeps New from attaching a circuit breaker to the
	// client. By default one is attached (a go-redis hook, one per
	// client, shared by every Backend and redislimit Store on it and made
	// with the options of the first): after BreakerFailures consecutive
	// commands fail for want of Redis (refused or reset connections,
	// timeouts), calls fail at once with an error matching ErrBreakerOpen
	// instead of each waiting out go-redis's dial retries. The first call
	// after each BreakerProbeInterval first sends a PING; once Redis
	// answers, the breaker closes. Opening and closing are logged to
	// Logger. A breaker attached by another Backend or Store on the client
	// applies even with this set.
	DisableBreaker bool
	// BreakerFailures is how many consecutive failed commands open the
	// breaker. 0 means DefaultBreakerFailures (3).
	BreakerFailures int
	// BreakerProbeInterval is the least time between two probes while the
	// breaker is open, timed by Clock when it is set; it also bounds each
	// probe's PING. 0 means DefaultBreakerProbeInterval (250ms).
	BreakerProbeInterval time.Duration
}

// Backend is a backend.Backend on Redis. It is safe for concurrent use. Close
// it when done; Close does not close the client.
type Backend struct {
	client  redis.UniversalClient
	keys    *keyring
	clk     clock.Clock
	log     *slog.Logger
	cluster bool
	batch   *batcher
	// linger is Options.CompleteLinger resolved: 0 for none.
	linger time.Duration
	// enqLinger is Options.EnqueueLinger resolved: 0 for none.
	enqLinger time.Duration
	notes     *notifier
	closed    atomic.Bool
	// outbox is the outbox's key prefix ("sluice:outbox:"); empty when
	// Options.Outbox is off.
	outbox string
	// events holds the event log's script arguments (eventlog.go).
	events eventLog
	// schedPrefix is the key prefix the scripts derive scheduler keys
	// from, or "" on a Cluster client, where the scheduler is off.
	schedPrefix string
	// idle remembers the queue sets a lease found empty (idle.go).
	idle leaseMemo[struct{}]
	// heads remembers the timed work a lean lease read (heads.go).
	heads leaseMemo[string]
	// scripts runs the scripts, as functions where the server can
	// (functions.go).
	scripts *runner
	// noLean turns the lean path off (lean.go), for tests of the full
	// scripts.
	noLean bool
}

var (
	_ backend.Backend       = (*Backend)(nil)
	_ backend.Notifier      = (*Backend)(nil)
	_ backend.TenantBackend = (*Backend)(nil)
	_ backend.GroupBackend  = (*Backend)(nil)
)

// errClosed is returned by calls after Close.
var errClosed = fmt.Errorf("redisqueue: %w", queue.ErrClosed)

// New returns a Backend on client. It fails with queue.ErrInvalidArgument
// when client is nil or an option is out of range. It asks Redis for its
// maxmemory-policy (briefly, ignoring errors such as a disabled CONFIG
// command) and logs a warning unless it is noeviction. Unless
// Options.DisableBreaker is set, it attaches a circuit breaker to client
// (see Options).
func New(client redis.UniversalClient, opts Options) (*Backend, error) {
	if client == nil {
		return nil, backend.InvalidArgument(queue.Field("", "client"), "must not be nil")
	}
	if opts.Prefix == "" {
		opts.Prefix = keyspace.DefaultPrefix
	}
	keys, err := newKeyring(opts.Prefix)
	if err != nil {
		return nil, backend.InvalidArgument(queue.Field("Options", "Prefix"), "%v", err)
	}
	if opts.MaxBatch < 0 || opts.Senders < 0 {
		return nil, backend.InvalidArgument(queue.Field("", "Options"), "MaxBatch and Senders must not be negative, got %d and %d", opts.MaxBatch, opts.Senders)
	}
	if opts.MaxBatch == 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	if opts.Senders == 0 {
		opts.Senders = DefaultSenders
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	_, cluster := client.(*redis.ClusterClient)
	if opts.Outbox && cluster {
		return nil, backend.InvalidArgument(queue.Field("Options", "Outbox"), "is not supported on a Redis Cluster client: the outbox's keys are global, not in one queue's slot")
	}
	if opts.Events && cluster {
		return nil, backend.InvalidArgument(queue.Field("Options", "Events"), "is not supported on a Redis Cluster client: the event log is one key, not in one queue's slot")
	}
	if err := attachBreaker(client, opts); err != nil {
		return nil, err
	}
	b := &Backend{client: client, keys: keys, clk: opts.Clock, log: opts.Logger, cluster: cluster}
	switch {
	case opts.CompleteLinger == 0:
		b.linger = DefaultCompleteLinger
	case opts.CompleteLinger > 0:
		b.linger = opts.CompleteLinger
	}
	b.enqLinger = max(opts.EnqueueLinger, 0)
	if opts.Outbox {
		b.outbox = keys.outbox
	}
	if err := b.events.init(keys, opts); err != nil {
		return nil, err
	}
	if !cluster {
		b.schedPrefix = string(opts.Prefix)
	}
	timers := ""
	if !cluster {
		timers = b.schedPrefix + "sched:timers"
	}
	b.notes = newNotifier(client, opts.Logger, timers)
	b.scripts = newRunner(client, opts.Logger, cluster)
	if !opts.DisableBatching {
		b.batch = newBatcher(b.scripts, opts.MaxBatch, opts.Senders)
	}
	checkEviction(client, opts.Logger)
	return b, nil
}

// checkEviction warns when Redis may evict keys: an evicted job hash or
// index entry is a job lost or stuck.
func checkEviction(client redis.UniversalClient, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cfg, err := client.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil {
		return // CONFIG may be renamed or disabled (managed Redis): nothing to say
	}
	if p, ok := cfg["maxmemory-policy"]; ok && p != "noeviction" {
		log.Warn("redisqueue: Redis maxmemory-policy is not noeviction; under memory pressure Redis may evict job keys and lose jobs. Set maxmemory-policy noeviction.",
			"maxmemory-policy", p)
	}
}

// Close stops the backend's goroutines (pipelines in flight finish first,
// notifications end); later calls return queue.ErrClosed. It does not
// close the client. Close is idempotent and returns nil.
func (b *Backend) Close() error {
	if !b.closed.CompareAndSwap(false, true) {
		return nil
	}
	if b.batch != nil {
		b.batch.close()
	}
	b.notes.close()
	return nil
}

// Ping checks that Redis answers and loads every script (and the function
// library where the server takes it), so a readiness probe fails when
// transitions would.
func (b *Backend) Ping(ctx context.Context) error {
	if b.closed.Load() {
		return errClosed
	}
	for _, s := range allScripts {
		if err := s.Load(ctx, b.client).Err(); err != nil {
			return b.fault("ping", err)
		}
	}
	if err := b.scripts.ready(ctx); err != nil {
		return b.fault("ping", err)
	}
	return nil
}

// now returns the time argument of a script: the injected clock's time in
// microseconds, or "" for Redis TIME.
func (b *Backend) now() string {
	if b.clk == nil {
		return ""
	}
	return strconv.FormatInt(b.clk.Now().UnixMicro(), 10)
}

// eval runs one script, through the batcher unless batching is off.
func (b *Backend) eval(ctx context.Context, op string, s *redis.Script, keys []string, args ...any) (any, error) {
	return b.evalCall(ctx, op, &call{script: s, keys: keys, args: args})
}

// evalCall runs c, through the batcher unless batching is off.
func (b *Backend) evalCall(ctx context.Context, op string, c *call) (any, error) {
	if b.closed.Load() {
		return nil, errClosed
	}
	b.withOutbox(c)
	var res any
	var err error
	if b.batch != nil {
		res, err = b.batch.run(ctx, c)
	} else {
		res, err = b.scripts.run(ctx, c.script, c.keys, c.argv())
	}
	b.bump(c)
	if err != nil {
		return nil, b.fault(op, err)
	}
	return res, nil
}

// withOutbox ends the arguments of a script that moves jobs with the
// outbox's (see loadScript).
func (b *Backend) withOutbox(c *call) {
	if c.tail == nil && movers[c.script] {
		c.tail = append(b.logArgs(), b.outboxArgs()...) // eventlog.go
	}
}

// direct runs c at once on its own connection, bypassing the batcher.
func (b *Backend) direct(ctx context.Context, op string, c *call) (any, error) {
	if b.closed.Load() {
		return nil, errClosed
	}
	b.withOutbox(c)
	res, err := b.runDirect(ctx, c)
	b.bump(c)
	if err != nil {
		return nil, b.fault(op, err)
	}
	return res, nil
}

// runDirect runs c, with the calls lingering in the batcher's line in
// the same round trip when there are any.
func (b *Backend) runDirect(ctx context.Context, c *call) (any, error) {
	if b.batch == nil {
		return b.scripts.run(ctx, c.script, c.keys, c.argv())
	}
	extra, done := b.batch.lingering()
	if extra == nil {
		return b.scripts.run(ctx, c.script, c.keys, c.argv())
	}
	defer done()
	c.done = make(chan struct{})
	// Not ctx: the lingering calls are others' (the batcher's rule).
	b.batch.send(context.Background(), append(extra, c))
	return c.res, c.err
}

// lingerFor returns how long a completion made with ctx may linger.
func (b *Backend) lingerFor(ctx context.Context) time.Duration {
	if b.batch == nil || !queue.IsBackgroundWrite(ctx) {
		return 0
	}
	return b.linger
}

// fault wraps a store error with the package name and the operation,
// keeping the queue's sentinels matchable.
func (b *Backend) fault(op string, err error) error {
	if errors.Is(err, queue.ErrClosed) {
		return errClosed
	}
	return fmt.Errorf("redisqueue: %s: %w", op, err)
}

// us converts a duration to whole microseconds for a script argument,
// bounded so that now plus it stays exact in Lua (about 100 years).
func us(d time.Duration) string {
	const maxUS = 100 * 365 * 24 * int64(time.Hour/time.Microsecond)
	n := d.Microseconds()
	n = max(min(n, maxUS), -maxUS)
	return strconv.FormatInt(n, 10)
}
