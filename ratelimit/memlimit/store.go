// Package memlimit is an in-process ratelimit.Store: counters in sharded
// maps, one lock per shard, bounded memory.
//
// It follows the semantics specified in package limittest exactly, so a
// service can move between memlimit and redislimit without its limits
// changing meaning. Counters live only in this process: use redislimit
// when several processes must share them.
package memlimit

import (
	"context"
	"hash/maphash"
	"math/bits"
	"sync"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/ratelimit"
)

// Defaults for Options.
const (
	DefaultShards        = 64
	DefaultMaxKeys       = 1_000_000
	DefaultSweepInterval = time.Minute
)

// Options configures a Store. The zero value is the default for every field.
type Options struct {
	// Clock is where the store reads the time; nil means the system clock.
	Clock clock.Clock
	// Shards is the number of independently locked maps, rounded up to a
	// power of two. 0 means DefaultShards (64).
	Shards int
	// MaxKeys bounds the number of counters held (one per key and limit
	// ID). When a shard is full, adding a counter drops another: an expired
	// one, or one not used recently (the clock algorithm, close to least
	// recently used), whose count is then forgotten: a forgotten
	// subject starts afresh, so size MaxKeys above the number of subjects
	// active within a window. The bound is enforced per shard as
	// ceil(MaxKeys / Shards). 0 means DefaultMaxKeys (1,000,000).
	MaxKeys int
	// SweepInterval is how often a background goroutine drops expired
	// counters from every shard; Close stops it. 0 means
	// DefaultSweepInterval (1 minute); negative means no goroutine
	// (expired counters then stay until a full shard needs their room, so
	// memory stays at its high-water mark, still bounded by MaxKeys).
	SweepInterval time.Duration
}

// Store is an in-process ratelimit.Store. It is safe for concurrent use.
type Store struct {
	shards []shard
	mask   uint64
	seed   maphash.Seed
	clock  clock.Clock
	fast   bool      // clock is the system clock: read it through base
	base   time.Time // wall and monotonic time at New
	baseUs int64     // base in µs since the epoch

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	gates     gateTable     // closed gates (admit.go)
	leases    leaseTable    // in-flight leases (leases.go)
	overrides overrideTable // dynamic overrides (overrides.go)
}

var _ ratelimit.Store = (*Store)(nil)

// New returns a Store; call Close to stop its sweeper.
func New(opts Options) *Store {
	n := opts.Shards
	if n <= 0 {
		n = DefaultShards
	}
	n = 1 << bits.Len(uint(n-1)) // round up to a power of two
	maxKeys := opts.MaxKeys
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	s := &Store{
		shards: make([]shard, n),
		mask:   uint64(n - 1),
		seed:   maphash.MakeSeed(),
		clock:  clock.Or(opts.Clock),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	if opts.Clock == nil {
		s.fast, s.base = true, time.Now()
		s.baseUs = s.base.UnixMicro()
	}
	for i := range s.shards {
		s.shards[i].init((maxKeys + n - 1) / n)
	}
	interval := opts.SweepInterval
	if interval == 0 {
		interval = DefaultSweepInterval
	}
	if interval < 0 {
		close(s.done)
		return s
	}
	go s.sweeper(interval)
	return s
}

// Close stops the background sweeper and waits for it. The store keeps
// answering afterwards; Close is idempotent and always returns nil.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { close(s.stop) })
	<-s.done
	return nil
}

func (s *Store) sweeper(interval time.Duration) {
	defer close(s.done)
	for {
		t := s.clock.NewTimer(interval)
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-t.C():
			s.Sweep()
		}
	}
}

// Sweep drops every expired counter and in-flight lease now and reports
// how many it dropped.
// The background sweeper calls it; it locks one shard at a time.
func (s *Store) Sweep() int {
	now := s.now()
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.lock()
		n += sh.sweep(now)
		sh.unlock()
	}
	return n + s.leases.sweep(now)
}

// Len returns the number of counters held.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// now reads the time in microseconds since the epoch. On the system clock
// it adds the monotonic time elapsed since New to the wall time read then:
// one clock read instead of two, and immune to wall-clock steps.
func (s *Store) now() int64 {
	if s.fast {
		return s.baseUs + time.Since(s.base).Microseconds()
	}
	return s.clock.Now().UnixMicro()
}

func (s *Store) hash(key string) uint64 { return maphash.String(s.seed, key) }

func (s *Store) shardOf(keyHash uint64) *shard { return &s.shards[keyHash&s.mask] }

// Consume decides all requests atomically, as ratelimit.Store requires:
// the shards involved are locked together, in index order so that
// concurrent calls cannot deadlock. The returned Results slice is the one
// allocation of a single-request call; ConsumeOne avoids it.
func (s *Store) Consume(ctx context.Context, reqs ...ratelimit.Request) (ratelimit.Decision, error) {
	if err := ctx.Err(); err != nil {
		return ratelimit.Decision{}, &ratelimit.StoreError{Op: "consume", Err: err}
	}
	if err := ratelimit.ValidateRequests(reqs); err != nil {
		return ratelimit.Decision{}, err
	}
	now := s.now()
	results := make([]ratelimit.Result, len(reqs))
	if len(reqs) == 1 {
		s.one(&reqs[0], now, &results[0])
	} else {
		s.many(reqs, results, now)
	}
	return ratelimit.Decide(results), nil
}

// ConsumeOne is Consume for a single request, returning its Result
// (Result.Allowed is the decision). It allocates nothing for a counter that
// already exists.
func (s *Store) ConsumeOne(ctx context.Context, r ratelimit.Request) (ratelimit.Result, error) {
	if err := ctx.Err(); err != nil {
		return ratelimit.Result{}, &ratelimit.StoreError{Op: "consume", Err: err}
	}
	if err := r.Validate(); err != nil {
		return ratelimit.Result{}, err
	}
	var res ratelimit.Result
	s.one(&r, s.now(), &res)
	return res, nil
}

// one decides a single request. It works on the entry's state in place:
// when the request is denied, the only changes decide makes are moving the
// counter to the current window or time, which change no answer.
func (s *Store) one(r *ratelimit.Request, now int64, res *ratelimit.Result) {
	kh := s.hash(r.Key)
	sh := s.shardOf(kh)
	k := keyOf(r)
	h := mapKey(kh, k)
	sh.lock()
	if e := sh.get(h, k); e != nil {
		decide(&e.st, &r.Limit, r.Cost, now, res)
		if res.Allowed && r.Cost > 0 {
			e.exp = e.st.expires(r.Limit)
		}
		sh.unlock()
		return
	}
	var st state
	decide(&st, &r.Limit, r.Cost, now, res)
	if res.Allowed && r.Cost > 0 {
		e := sh.insert(h, k, now)
		e.st, e.exp = st, st.expires(r.Limit)
	}
	sh.unlock()
}
