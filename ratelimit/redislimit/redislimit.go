// Package redislimit is a ratelimit.Store on Redis, shared by every process
// that talks to the same Redis.
//
// Each Consume call is decided by one run of a Lua script that reads and
// writes every counter of the call at once, so a decision is atomic and all
// or nothing: when any
// limit denies, no counter moves. The time comes from Redis TIME inside the
// script, so all processes count on one clock.
//
// Keys are the request's logical key, ":" and the limit's ID, under a
// prefix (default "sluice:"), such as
// "sluice:rate-limit:member:export:{member:42}:f60000". Limiter keys carry the
// subject in a hash tag, so the counters of one decision share a Redis Cluster
// slot. Every key expires once its state no longer matters.
//
// Concurrent Consume calls are sent together. At most Options.Pipelines
// batches are in flight; while they all are, further calls gather. A batch
// goes out as one script run that decides its calls one after another,
// each still all or nothing, so the batch pays for one round trip, one
// script call and one TIME. On a Cluster (or Ring) client, whose calls may
// live on different nodes, a batch is instead one pipeline of EVALSHA
// commands, one per call. That keeps throughput from stopping at one round trip per
// goroutine. A caller waiting for a batch returns as soon as its context is
// done. A call whose context can never be cancelled (Done returns nil) and
// that finds a batch slot free is sent from the caller's own goroutine,
// saving a hand-off. Options.DisableBatching turns batching off.
//
// Counts are exact integers while Quota × Window in microseconds stays
// below 2^53 (about 2.5 million per hour): Lua numbers are doubles.
//
// The store works with go-redis v9 single-node, Sentinel (failover) and
// Cluster clients, on Redis 5 or later.
package redislimit

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/ratelimit"
)

//go:embed decide.lua
var decideSource string

// decideScript is shared by all stores: go-redis keeps its SHA-1 and falls
// back to EVAL when a server does not know it.
var decideScript = redis.NewScript(decideSource)

// ErrClosed is matched by errors from a Store after Close. Such errors also
// match ratelimit.ErrStoreUnavailable, so failure modes apply.
var ErrClosed = errors.New("redislimit: store closed")

// Defaults of Options.
const (
	DefaultMaxBatch      = 128
	DefaultPipelines     = 2
	DefaultDenyCacheSize = 65536
	// InjectedClockMinTTL is the least lifetime of a key when Options.Clock
	// is set; see Options.Clock.
	InjectedClockMinTTL = time.Hour
)

// Options configures a Store. The zero value is ready to use.
type Options struct {
	// Prefix is put before every logical key. The zero value means
	// keyspace.DefaultPrefix ("sluice:").
	Prefix keyspace.Prefix

	// Clock, when set, supplies the time passed to the script instead of
	// Redis TIME. It exists for tests that move time with a fake clock; in
	// production leave it nil so every process counts on the server's clock.
	// Because Redis expires keys on its own real clock, keys then live at
	// least InjectedClockMinTTL; counter values carry their window or
	// timestamp, so a key that outlives its window is read as stale.
	Clock clock.Clock

	// DisableBatching sends each Consume call as its own EVALSHA round trip
	// instead of gathering concurrent calls into pipelines. A call then
	// honours its context only as far as the client does (go-redis ignores
	// context deadlines unless ContextTimeoutEnabled is set). The default
	// (false) batches.
	DisableBatching bool
	// MaxBatch caps how many Consume calls one batch carries. 0 means
	// DefaultMaxBatch (128).
	MaxBatch int
	// Pipelines is how many batches may be in flight at once; while they
	// are, further calls gather into the next batch. More lower the wait
	// at moderate concurrency; fewer make larger batches. 0 means
	// DefaultPipelines (2).
	Pipelines int

	// DenyCache keeps each denial in process until the denied request could
	// be allowed again, and answers matching requests (same counter, same
	// limit, cost at least the denied cost) without asking Redis. Off by
	// default. The trade-off: while a denial is cached, counts made by
	// other processes are not seen, so the answer may say "denied" a
	// little longer than Redis would; it never admits more than Redis
	// would, because only denials are cached and a counter can only need
	// longer to recover, not shorter. In a cached answer, the results of
	// limits that were not cached carry only their Limit and Allowed=true.
	DenyCache bool
	// DenyCacheSize caps the cached denials. 0 means DefaultDenyCacheSize
	// (65536).
	DenyCacheSize int

	// DisableBreaker keeps New from attaching a circuit breaker to the
	// client. By default one is attached (a go-redis hook, one per
	// client, shared by every Store and redisqueue Backend on it and made
	// with the options of the first): after BreakerFailures consecutive
	// commands fail for want of Redis (refused or reset connections,
	// timeouts), calls fail at once with an error matching ErrBreakerOpen
	// and ratelimit.ErrStoreUnavailable, so the failure mode answers
	// without waiting for a timeout. The first call after each
	// BreakerProbeInterval first sends a PING; once Redis answers, the
	// breaker closes and calls go to Redis again. A breaker attached by
	// another Store or Backend on the client applies even with this set.
	DisableBreaker bool
	// BreakerFailures is how many consecutive failed commands open the
	// breaker. 0 means DefaultBreakerFailures (3).
	BreakerFailures int
	// BreakerProbeInterval is the least time between two probes while the
	// breaker is open, timed by Clock when it is set; it also bounds each
	// probe's PING. 0 means DefaultBreakerProbeInterval (250ms).
	BreakerProbeInterval time.Duration
}

// Store is a ratelimit.Store on Redis. It is safe for concurrent use. Make
// one per client and Close it when done; Close does not close the client.
type Store struct {
	client  redis.UniversalClient
	prefix  keyspace.Prefix
	clock   clock.Clock
	minTTL  string
	cluster bool
	batch   *batcher
	deny    *denyCache
	closed  atomic.Bool
}

// New returns a Store on client. It fails with ratelimit.ErrInvalidArgument
// when client is nil or an option is out of range. New does not talk to
// Redis; call Ping to check the connection. Unless Options.DisableBreaker
// is set, it attaches a circuit breaker to client (see Options).
func New(client redis.UniversalClient, opts Options) (*Store, error) {
	if client == nil {
		return nil, ratelimit.InvalidArgument("client", "must not be nil")
	}
	if opts.Prefix == "" {
		opts.Prefix = keyspace.DefaultPrefix
	}
	if err := opts.Prefix.Validate(); err != nil {
		return nil, ratelimit.InvalidArgument("Options.Prefix", "%v", err)
	}
	if err := checkSizes(&opts); err != nil {
		return nil, err
	}
	if err := attachBreaker(client, opts); err != nil {
		return nil, err
	}
	_, cluster := client.(*redis.ClusterClient)
	s := &Store{client: client, prefix: opts.Prefix, clock: opts.Clock, minTTL: "0", cluster: cluster}
	if opts.Clock != nil {
		s.minTTL = strconv.FormatInt(InjectedClockMinTTL.Milliseconds(), 10)
	}
	if opts.DenyCache {
		s.deny = newDenyCache(opts.DenyCacheSize)
	}
	if !opts.DisableBatching {
		// Only a client with one server behind it (single or Sentinel) can
		// run calls on unrelated keys in one script.
		_, single := client.(*redis.Client)
		s.batch = newBatcher(client, opts.MaxBatch, opts.Pipelines, s.minTTL, single)
	}
	return s, nil
}

func checkSizes(o *Options) error {
	switch {
	case o.MaxBatch < 0:
		return ratelimit.InvalidArgument("Options.MaxBatch", "must not be negative, got %d", o.MaxBatch)
	case o.Pipelines < 0:
		return ratelimit.InvalidArgument("Options.Pipelines", "must not be negative, got %d", o.Pipelines)
	case o.DenyCacheSize < 0:
		return ratelimit.InvalidArgument("Options.DenyCacheSize", "must not be negative, got %d", o.DenyCacheSize)
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.Pipelines == 0 {
		o.Pipelines = DefaultPipelines
	}
	if o.DenyCacheSize == 0 {
		o.DenyCacheSize = DefaultDenyCacheSize
	}
	return nil
}

// Close stops the batching goroutines after their pipelines in flight
// finish; calls after Close fail with ErrClosed. It does not close the
// client. Close is idempotent and always returns nil.
func (s *Store) Close() error {
	if s.closed.CompareAndSwap(false, true) && s.batch != nil {
		s.batch.close()
	}
	return nil
}

// Ping checks that Redis answers and that it holds the decision script
// (loading it if not), so that a readiness probe fails when decisions would.
// Errors match ratelimit.ErrStoreUnavailable.
func (s *Store) Ping(ctx context.Context) error {
	if s.closed.Load() {
		return storeError("ping", ErrClosed)
	}
	if err := s.client.Ping(ctx).Err(); err != nil {
		return storeError("ping", err)
	}
	if err := decideScript.Load(ctx, s.client).Err(); err != nil {
		return storeError("ping", fmt.Errorf("load script: %w", err))
	}
	return nil
}

// Consume decides reqs in one atomic script run, all or nothing. See
// ratelimit.Store. Invalid requests, including requests whose keys fall in
// different Redis Cluster slots on a cluster client, fail with
// ratelimit.ErrInvalidArgument before Redis is asked; Redis and network
// faults, malformed replies and calls after Close fail with
// ratelimit.ErrStoreUnavailable.
func (s *Store) Consume(ctx context.Context, reqs ...ratelimit.Request) (ratelimit.Decision, error) {
	if err := ratelimit.ValidateRequests(reqs); err != nil {
		return ratelimit.Decision{}, err
	}
	keys, err := s.keys(reqs)
	if err != nil {
		return ratelimit.Decision{}, err
	}
	if s.closed.Load() {
		return ratelimit.Decision{}, storeError("consume", ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return ratelimit.Decision{}, storeError("consume", err)
	}
	if s.deny != nil {
		if d, ok := s.deny.answer(s.localNow(), keys, reqs); ok {
			return d, nil
		}
	}
	now, args := s.now(), requestArgs(reqs)
	var reply []int64
	if s.batch != nil {
		reply, err = s.batch.do(ctx, keys, now, args)
	} else {
		all := append([]any{now, s.minTTL, 1, len(reqs)}, args...)
		reply, err = decideScript.Run(ctx, s.client, keys, all...).Int64Slice()
	}
	if err != nil {
		if errors.Is(err, errBatcherClosed) {
			err = ErrClosed
		}
		return ratelimit.Decision{}, storeError("consume", err)
	}
	d, err := parseReply(reply, keys, reqs)
	if err != nil {
		return ratelimit.Decision{}, storeError("consume", err)
	}
	if s.deny != nil && !d.Allowed {
		s.deny.remember(s.localNow(), keys, reqs, d)
	}
	return d, nil
}

// keys returns the physical counter keys of reqs and, on a cluster client,
// checks that they share one slot.
func (s *Store) keys(reqs []ratelimit.Request) ([]string, error) {
	keys := make([]string, len(reqs))
	for i, r := range reqs {
		if strings.HasPrefix(r.Key, string(s.prefix)) {
			return nil, ratelimit.InvalidArgument("Request.Key", "%q must be a logical key, without the prefix %q", r.Key, s.prefix)
		}
		keys[i] = string(s.prefix) + r.Key + ":" + r.Limit.ID()
	}
	if s.cluster {
		if err := sameSlot(keys, reqs); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// now is the script's time argument: "" to read Redis TIME, or the
// injected clock's time in microseconds.
func (s *Store) now() any {
	if s.clock != nil {
		return s.clock.Now().UnixMicro()
	}
	return ""
}

// requestArgs encodes reqs for decide.lua, five values per request.
func requestArgs(reqs []ratelimit.Request) []any {
	args := make([]any, 0, 5*len(reqs))
	for _, r := range reqs {
		args = append(args, int64(r.Limit.Algorithm), r.Limit.Quota,
			r.Limit.Window.Microseconds(), r.Limit.Capacity(), r.Cost)
	}
	return args
}

// localNow is the process's view of the time, used only by the deny cache
// to age its entries.
func (s *Store) localNow() time.Time { return clock.Or(s.clock).Now() }

func storeError(op string, err error) error {
	return &ratelimit.StoreError{Op: op, Err: fmt.Errorf("redislimit: %w", err)}
}
