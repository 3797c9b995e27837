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
//	sluice:queue:{mail}:pending     ready jobs; score = band, member = rank and sequence
//	sluice:queue:{mail}:scheduled   delayed and snoozed jobs; score = RunAt
//	sluice:queue:{mail}:retrying    jobs waiting to retry; score = RunAt
//	sluice:queue:{mail}:active      leased jobs; score = lease deadline (the rescue index)
//	sluice:queue:{mail}:completed   and :failed, :cancelled; score = when retention starts (see Memory)
//	sluice:queue:{mail}:waiting     jobs held back by a tenant or group; ordered as pending
//	sluice:queue:{mail}:sched       the fair order: virtual time, aging step, finish tags
//	sluice:queue:{mail}:paused      the end of the queue's pause (Pause of a queue scope)
//	sluice:queue:{mail}:jobs        every job of the queue, in enqueue order (listing)
//	sluice:queue:{mail}:seq         the last sequence handed out
//	sluice:queue:{mail}:job:<seq>   a job (a hash); :errors its error history (a list)
//	sluice:queue:{mail}:unique:<k>  the job holding unique key k
//	sluice:queue:{mail}:ready       pub/sub channel: jobs may be ready
//	sluice:queues                   the set of queue names (for calls on all queues; see Registry)
//	sluice:outbox:...               the event outbox, with Options.Outbox (see below)
//	sluice:sched:t:<tenant>         a tenant's settings, pause and job counts per state
//	sluice:sched:tenants            the tenants with unfinished jobs or settings (Tenants)
//	sluice:sched:g:<group>          a group's spec, state and job counts per state
//	sluice:sched:...                the scheduler's other keys (see lua/sched.lua)
//
// Times are Unix microseconds; sorted-set scores stay exact because they
// are integers below 2^53. The ready set is in the fair order of
// queue.TenantBackend: a job's score is its band (the priority, or 0 with
// aging: at most queue.MaxPriority), and its member is its rank (the fair
// start tag, plus the aged priority) in 16 digits followed by its
// sequence. Redis orders equal scores by member, so (band, rank, sequence)
// order needs no packing into one float and has no range limit.
//
// # Tenants and groups
//
// The backend implements queue.TenantBackend and queue.GroupBackend with
// the rules written there. A tenant's and a group's job counts per state,
// and their sets of pending and waiting jobs, change only in the script of
// the transition that moves the job (lua/sched.lua's move), so they never
// drift from the jobs. One Lua function, ready, decides whether a job that
// becomes ready is pending or waiting, for every script that makes a job
// ready. A group's completion job is enqueued by the script whose
// transition finishes the group's last job. The tenant list
// (queue.TenantLister) reads a registry of tenant names kept by the same
// scripts. Jobs without tenant or group cost a fair tag per enqueue and
// little else.
//
// # Job ids
//
// A job's sequence is the time of its enqueue in microseconds (from the
// backend's clock), or one more than the queue's previous sequence when
// that is not smaller, written as 16 digits. It is unique and increasing
// within a queue and follows enqueue time across queues, until the year
// 2255. The id is the sequence, "-" and the queue name, such as
// "1893553445000000-mail": ids sort by enqueue time, and Get finds the
// queue (and so the Cluster slot) in the id itself, with no index to keep
// in step. Ids go into URL paths (/v1/jobs/{id}), so they hold only the
// characters RFC 3986 leaves unreserved (A-Z a-z 0-9 - . _ ~): the queue
// name is written as in keys (keyspace.Escape) but with '~' in place of
// '%', and a '~' of the name as "~7E". Queue "c:d" gives
// "1893553445000000-c~3Ad"; a name of letters, digits, '-', '.' and '_'
// appears as it is. Ids made before this form, with '%' escapes, are still
// read; those of a queue whose name holds '~' are not.
//
// # Registry
//
// Calls on every queue (Stats, RescueExpired, Cleanup) find the queues in
// the registry, sluice:queues. Every script that gives a queue a job it
// may not have had (enqueue, lease, retry, a group's completion job) adds
// the queue's name there in the same step; adding a name already there
// changes nothing. So when Redis loses the registry (a restart without
// persistence, FLUSHDB, a failover that lost a write), the next such call
// writes it again, and a queue's expired leases are rescued and its counts
// shown. On a Redis Cluster client the registry is in no queue's slot, so
// a script cannot write it: Enqueue adds the names before its scripts, and
// Lease and Retry after theirs, with one SADD per call.
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
// retention; unique keys held for a window also expire on their own. The
// jobs of a group are kept until the group has ended (it is done and its
// completion job has finished), and their retention starts then: the
// cleaner moves such a job it finds too early later in its state's index
// (to the group's end, or to now while the group has not ended), so it
// looks at it again one retention later and it never stands in front of
// jobs that may go. A done group is deleted a retention after it ended.
// Redis must not evict keys: New logs a warning when maxmemory-policy is
// not noeviction, because an evicted job or index entry is a lost job.
//
// # Event outbox
//
// With Options.Outbox the backend implements queue.Outbox: the script that
// moves a job to a final state (Complete, a final Fail, Cancel, Snooze or
// Requeue of a job whose cancel was requested, RescueExpired) appends the
// job's event in the same run, so an event exists exactly when its
// transition happened. Its keys are global, not per queue:
//
//	sluice:outbox:due               event ids; score = when each is next due (µs)
//	sluice:outbox:event:<id>        an event (a hash), its claim token and delivery progress
//	sluice:outbox:seq               the last event number
//	sluice:outbox:log               the delivery log; score = its sequence
//	sluice:outbox:log:job:<id>      and log:sub:<name>, log:event:<id>: filters
//	sluice:outbox:delivery:<seq>    a log entry (a hash)
//	sluice:outbox:log:seq           the last log sequence
//
// Event ids have backend.NewEventID's form, "evt_" and 32 hex digits: the
// event's number in this store (16 digits) and a random nonce per call, so
// they are unique across stores and, within one, sort in the order the
// events were made. A claim sets the event's token and moves its due time
// to the claim's end, so an expired claim makes it due again; AckEvent
// deletes it and RetryEvent clears the token and sets a new due time, both
// fenced by the token in one script. Acknowledged events leave at once;
// log entries stay until PruneDeliveries (queue/webhook's Dispatcher
// prunes them hourly).
//
// Because those keys live in no queue's slot, New refuses Options.Outbox
// on a Redis Cluster client.
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
//
// Tenants and groups span queues (a tenant's limit counts its jobs in
// every queue; a group's completion job may go to another queue), so their
// keys cannot share a queue's hash tag, and the scripts derive some keys
// from job fields (a tenant's key from a job's tenant). The scheduler
// therefore needs a single Redis (or Sentinel and replicas): on a Cluster
// client it is off, Capabilities lacks queue.CapTenants and
// queue.CapGroups, and the tenant and group methods return an
// *queue.UnsupportedError.
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

	// Outbox records an event (queue.Event) in the same script as every
	// job transition to a final state, for a consumer such as
	// queue/webhook's Dispatcher to deliver (see queue.Outbox and the
	// package doc). Default off: with no consumer the outbox would only
	// grow. Every process sharing the Redis and prefix must use the same
	// setting, or the transitions of the others record nothing. Not
	// supported on a Redis Cluster client: New refuses it there, because
	// the outbox's keys are global, not in any queue's slot.
	Outbox bool
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
	// outbox is the outbox's key prefix ("sluice:outbox:"); empty when
	// Options.Outbox is off.
	outbox string
	// schedPrefix is the key prefix the scripts derive scheduler keys
	// from, or "" on a Cluster client, where the scheduler is off.
	schedPrefix string
}

var (
	_ queue.Backend       = (*Backend)(nil)
	_ queue.Notifier      = (*Backend)(nil)
	_ queue.TenantBackend = (*Backend)(nil)
	_ queue.GroupBackend  = (*Backend)(nil)
)

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
	if opts.Outbox && cluster {
		return nil, queue.InvalidArgument("Options.Outbox", "is not supported on a Redis Cluster client: the outbox's keys are global, not in one queue's slot")
	}
	b := &Backend{client: client, keys: keys, clk: opts.Clock, log: opts.Logger, cluster: cluster}
	if opts.Outbox {
		b.outbox = keys.outbox
	}
	if !cluster {
		b.schedPrefix = string(opts.Prefix)
	}
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
	b.withOutbox(c)
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

// withOutbox ends the arguments of a script that moves jobs with the
// outbox's (see loadScript).
func (b *Backend) withOutbox(c *call) {
	if c.tail == nil && movers[c.script] {
		c.tail = b.outboxArgs()
	}
}

// direct runs c at once on its own connection, bypassing the batcher.
func (b *Backend) direct(ctx context.Context, op string, c *call) (any, error) {
	if b.closed.Load() {
		return nil, errClosed
	}
	b.withOutbox(c)
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
