// Package redisqueue is a queue.Backend on Redis, shared by every worker and
// client that talks to the same Redis (single node, Sentinel or Cluster).
//
// # Transitions
//
// Every transition (enqueue, lease, extend, complete, fail, snooze or
// requeue, cancel, rescue, cleanup) is one Lua script, so it is atomic: no
// other client sees a half-done step, and a job never sits in active
// without its lease token and deadline. The scripts are sent by SHA-1
// (EVALSHA) and loaded on demand. Concurrent calls are gathered into
// pipelines (see Options.DisableBatching), one round trip for many, and
// concurrent Complete calls on one queue, or single-queue Enqueue calls,
// that meet there run as one script over all their jobs. A Lease hands out
// many jobs per script run.
//
// # Keys
//
// Every key is built through package keyspace under Options.Prefix
// (default "sluice:") with the queue name as the Redis Cluster hash tag, so
// all keys of a queue live in one slot:
//
//	sluice:queue:{mail}:pending     ready jobs; score = priority, ties by member (the sequence)
//	sluice:queue:{mail}:scheduled   delayed and snoozed jobs; score = RunAt
//	sluice:queue:{mail}:retrying    jobs waiting to retry; score = RunAt
//	sluice:queue:{mail}:active      leased jobs; score = lease deadline (the rescue index)
//	sluice:queue:{mail}:completed   and :failed, :cancelled; score = FinishedAt (retention, stats)
//	sluice:queue:{mail}:waiting     reserved for the tenant scheduler
//	sluice:queue:{mail}:jobs        every job of the queue, in enqueue order (listing)
//	sluice:queue:{mail}:seq         the last sequence handed out
//	sluice:queue:{mail}:job:<seq>   a job (a hash); :errors its error history (a list)
//	sluice:queue:{mail}:unique:<k>  the job holding unique key k
//	sluice:queue:{mail}:ready       pub/sub channel: jobs may be ready
//	sluice:queues                   the set of queue names (for calls on all queues)
//
// Times are Unix microseconds; sorted-set scores stay exact because they
// are integers below 2^53. The ready set's score is the priority alone
// (0..queue.MaxPriority); Redis orders equal scores by member, and the
// member is the job's fixed-width sequence, so (priority, sequence) order
// needs no packing into one float and has no range limit.
//
// # Job ids
//
// A job's sequence is the time of its enqueue in microseconds (from the
// backend's clock), or one more than the queue's previous sequence when
// that is not smaller, written as 16 digits. It is unique and increasing
// within a queue and follows enqueue time across queues, until the year
// 2255. The id is the sequence, "-" and the escaped queue name, such as
// "1893553445000000-mail": ids sort by enqueue time, and Get finds the
// queue (and so the Cluster slot) in the id itself, with no index to keep
// in step.
//
// # Time
//
// Scripts read Redis TIME, so every process shares the server's clock,
// unless Options.Clock is set (for tests): then the time is sent with each
// call.
//
// # Memory
//
// Finished jobs are deleted by Cleanup (the worker's cleaner) after their
// retention; unique keys held for a window also expire on their own.
// Redis must not evict keys: New logs a warning when maxmemory-policy is
// not noeviction, because an evicted job or index entry is a lost job.
//
// # Cluster
//
// On a Redis Cluster client, a call on several queues runs one script per
// queue, because each queue lives in its own slot: Lease then takes jobs
// queue by queue in the order given (by priority within each queue, not
// across them), and a batch that spans queues is stored queue by queue,
// atomic per queue but not as a whole, so Capabilities lacks
// queue.CapAtomicBatch there. On a single node or Sentinel every call is
// one script, whatever the queues.
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

	"github.com/sluicehq/sluice/internal/clock"
	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
)

// Defaults of Options.
const (
	DefaultMaxBatch = 256
	DefaultSenders  = 2
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
}

// Backend is a queue.Backend on Redis. It is safe for concurrent use. Close
// it when done; Close does not close the client.
type Backend struct {
	client  redis.UniversalClient
	keys    *keyring
	clk     clock.Clock
	log     *slog.Logger
	cluster bool
	batch   *batcher
	notes   *notifier
	closed  atomic.Bool
	known   syncSet // queues already in the registry
}

var (
	_ queue.Backend  = (*Backend)(nil)
	_ queue.Notifier = (*Backend)(nil)
	_ queue.Capable  = (*Backend)(nil)
)

// Capabilities implements queue.Capable: every capability except
// queue.CapTenants and queue.CapTenantList (this backend does not
// implement queue.TenantBackend or queue.TenantLister yet: jobs record
// their tenant, but no tenant limit holds them back), and
// except queue.CapAtomicBatch on a Redis Cluster client (see the package
// doc).
func (b *Backend) Capabilities() queue.Capabilities {
	caps := queue.AllCapabilities.Without(queue.CapTenants, queue.CapTenantList)
	if b.cluster {
		return caps.Without(queue.CapAtomicBatch)
	}
	return caps
}

// errClosed is returned by calls after Close.
var errClosed = fmt.Errorf("redisqueue: %w", queue.ErrClosed)

// New returns a Backend on client. It fails with queue.ErrInvalidArgument
// when client is nil or an option is out of range. It asks Redis for its
// maxmemory-policy (briefly, ignoring errors such as a disabled CONFIG
// command) and logs a warning unless it is noeviction.
func New(client redis.UniversalClient, opts Options) (*Backend, error) {
	if client == nil {
		return nil, queue.InvalidArgument("client", "must not be nil")
	}
	if opts.Prefix == "" {
		opts.Prefix = keyspace.DefaultPrefix
	}
	keys, err := newKeyring(opts.Prefix)
	if err != nil {
		return nil, queue.InvalidArgument("Options.Prefix", "%v", err)
	}
	if opts.MaxBatch < 0 || opts.Senders < 0 {
		return nil, queue.InvalidArgument("Options", "MaxBatch and Senders must not be negative, got %d and %d", opts.MaxBatch, opts.Senders)
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
	b := &Backend{client: client, keys: keys, clk: opts.Clock, log: opts.Logger, cluster: cluster}
	b.notes = newNotifier(client, opts.Logger)
	if !opts.DisableBatching {
		b.batch = newBatcher(client, opts.MaxBatch, opts.Senders)
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

// Ping checks that Redis answers and loads every script, so a readiness
// probe fails when transitions would.
func (b *Backend) Ping(ctx context.Context) error {
	if b.closed.Load() {
		return errClosed
	}
	for _, s := range allScripts {
		if err := s.Load(ctx, b.client).Err(); err != nil {
			return b.fault("ping", err)
		}
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
	var res any
	var err error
	if b.batch != nil {
		res, err = b.batch.run(ctx, c)
	} else {
		res, err = c.script.Run(ctx, b.client, c.keys, c.argv()...).Result()
	}
	if err != nil {
		return nil, b.fault(op, err)
	}
	return res, nil
}

// direct runs c at once on its own connection, bypassing the batcher.
func (b *Backend) direct(ctx context.Context, op string, c *call) (any, error) {
	if b.closed.Load() {
		return nil, errClosed
	}
	res, err := c.script.Run(ctx, b.client, c.keys, c.argv()...).Result()
	if err != nil {
		return nil, b.fault(op, err)
	}
	return res, nil
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
