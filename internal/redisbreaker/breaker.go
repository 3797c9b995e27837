// Package redisbreaker fails Redis commands fast while Redis is
// unreachable. A Breaker is a go-redis hook (see Attach): after a run of
// consecutive commands that failed for want of Redis (refused or reset
// connections, timeouts, a server still loading), it opens, and commands
// fail at once with an error matching ErrOpen instead of each waiting for
// go-redis's dial retries and its caller's timeout. While open, a PING is
// sent in the background at most once per probe interval, started by the
// first command that comes after it is due (which fails at once like the
// others); when the PING is answered the breaker closes. So no command
// ever waits for a probe, and recovery needs no restart and no goroutine
// beyond the probe in flight.
//
// Errors Redis answers with (a script error, WRONGTYPE, NOSCRIPT) mean
// Redis is up: they close the run of failures. A cancelled context and a
// closed client say nothing about Redis and are not counted.
package redisbreaker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/clock"
)

// Defaults of Options.
const (
	DefaultFailures      = 3
	DefaultProbeInterval = 250 * time.Millisecond
)

// ErrOpen is matched by the errors of commands the breaker refused.
var ErrOpen = errors.New("redisbreaker: Redis unreachable, failing fast until a probe answers")

// OpenError is the error of a refused command: it matches ErrOpen and
// names the failure that opened the breaker (or the last probe's).
type OpenError struct {
	// Cause is the last failure seen.
	Cause error
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("%s (last failure: %v)", ErrOpen.Error(), e.Cause)
}

// Is makes errors.Is(err, ErrOpen) true.
func (e *OpenError) Is(target error) bool { return target == ErrOpen }

// Options configures a Breaker. The zero value is ready to use.
type Options struct {
	// Failures is how many consecutive commands must fail for want of
	// Redis to open the breaker. 0 means DefaultFailures (3).
	Failures int
	// ProbeInterval is the least time between two probes while open; it
	// also bounds each probe's PING. 0 means DefaultProbeInterval (250ms).
	ProbeInterval time.Duration
	// Clock times the probes; nil means the system clock.
	Clock clock.Clock
	// Logger receives one line when the breaker opens and one when it
	// closes; nil logs nothing.
	Logger *slog.Logger
}

// Breaker is a circuit breaker for the commands of one go-redis client.
// It is safe for concurrent use.
type Breaker struct {
	failures int
	interval time.Duration
	clk      clock.Clock
	log      *slog.Logger

	// Read without the lock on every command; written under mu.
	open      atomic.Bool
	run       atomic.Int64 // consecutive failures while closed
	nextProbe atomic.Int64 // while open: when the next probe may go (Unix ns)
	probing   atomic.Bool  // a probe is in flight
	cause     atomic.Pointer[error]

	mu     sync.Mutex
	probes sync.WaitGroup // probes in flight
}

// New returns a closed Breaker. It fails when an option is negative.
func New(o Options) (*Breaker, error) {
	if o.Failures < 0 || o.ProbeInterval < 0 {
		return nil, fmt.Errorf("redisbreaker: Failures and ProbeInterval must not be negative, got %d and %s", o.Failures, o.ProbeInterval)
	}
	if o.Failures == 0 {
		o.Failures = DefaultFailures
	}
	if o.ProbeInterval == 0 {
		o.ProbeInterval = DefaultProbeInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Breaker{failures: o.Failures, interval: o.ProbeInterval, clk: clock.Or(o.Clock), log: o.Logger}, nil
}

// Open reports whether the breaker is open: commands fail fast.
func (b *Breaker) Open() bool { return b.open.Load() }

// outcome is what a command's error says about Redis.
type outcome int8

const (
	neutral outcome = iota // says nothing: cancelled, client closed, refused by a breaker
	up                     // Redis answered
	down                   // Redis could not be reached or could not serve
)

// classify reads a command's error. Anything that is neither an answer
// from Redis nor the caller's or client's own doing counts as down:
// network errors, timeouts (the caller's deadline included: Redis did not
// answer in time), pool timeouts and protocol errors on a broken stream.
func classify(err error) outcome {
	switch {
	case err == nil, errors.Is(err, errNil):
		return up
	case errors.Is(err, context.Canceled), errors.Is(err, redis.ErrClosed), errors.Is(err, ErrOpen),
		errors.Is(err, redis.ErrPoolExhausted): // the client's own cap (MaxActiveConns), not Redis
		return neutral
	}
	return classifyReply(err)
}

// errNil is redis.Nil as an error value, boxed once.
var errNil error = redis.Nil

// classifyReply tells an error Redis answered with (up, unless it says
// Redis cannot serve) from any other error (down).
func classifyReply(err error) outcome {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return down
	}
	for _, p := range []string{"LOADING", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN"} {
		if redis.HasErrorPrefix(rerr, p) {
			return down
		}
	}
	return up
}

// record counts a command's outcome while closed, opening the breaker
// after Failures consecutive failures. A success costs two atomic loads.
func (b *Breaker) record(err error) {
	switch classify(err) {
	case up:
		if b.run.Load() == 0 || b.open.Load() {
			return // nothing to reset, or an answer older than the opening
		}
		b.mu.Lock()
		if !b.open.Load() {
			b.run.Store(0)
		}
		b.mu.Unlock()
	case down:
		b.fail(err)
	}
}

// fail counts one failure; kept apart from record so that only a failure
// pays for storing its error.
func (b *Breaker) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cause.Store(&err)
	if b.open.Load() {
		return
	}
	if b.run.Add(1) >= int64(b.failures) {
		b.trip(err)
	}
}

// Trip opens the breaker at once, as if err had been its last failure:
// for a caller that found Redis unreachable by other means (a check at
// start), so that the commands that follow fail fast from the first.
func (b *Breaker) Trip(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cause.Store(&err)
	if !b.open.Load() {
		b.trip(err)
	}
}

// trip opens the breaker; called with mu held.
func (b *Breaker) trip(err error) {
	b.nextProbe.Store(b.clk.Now().Add(b.interval).UnixNano())
	b.open.Store(true)
	b.log.Warn("redisbreaker: Redis unreachable: failing fast until it answers a probe",
		"failures", b.run.Load(), "probe_interval", b.interval, "error", err)
}

// admit decides whether a command may go: nil while the breaker is
// closed, else the error to fail it with at once. When a probe is due, it
// starts one in the background; ping returns the function that sends it
// (built only then, since building it allocates).
func (b *Breaker) admit(ctx context.Context, ping func() func(ctx context.Context) error) error {
	if !b.open.Load() || ctx.Value(probeKey{}) == b {
		return nil // closed, or the probe's own commands (a new connection's HELLO)
	}
	if b.clk.Now().UnixNano() >= b.nextProbe.Load() && b.probing.CompareAndSwap(false, true) {
		b.probes.Add(1)
		// The probe outlives the command that started it: it keeps the
		// command's context values, not its cancellation.
		go b.probe(context.WithoutCancel(ctx), ping())
	}
	return &OpenError{Cause: b.lastCause()}
}

func (b *Breaker) lastCause() error {
	if p := b.cause.Load(); p != nil {
		return *p
	}
	return nil
}

// probeKey marks the context of a probe: go-redis sends a new
// connection's handshake through the hooks too, and the breaker must let
// it pass.
type probeKey struct{}

// probe sends one PING, bounded by the probe interval, and closes the
// breaker when Redis answers; else the next probe is due an interval
// later.
func (b *Breaker) probe(ctx context.Context, ping func(ctx context.Context) error) {
	defer b.probes.Done()
	pctx, cancel := context.WithTimeout(context.WithValue(ctx, probeKey{}, b), b.interval)
	err := ping(pctx)
	cancel()
	b.mu.Lock()
	defer b.mu.Unlock()
	defer b.probing.Store(false)
	if classify(err) == up {
		b.run.Store(0)
		b.open.Store(false)
		b.log.Info("redisbreaker: Redis answers again: breaker closed")
		return
	}
	if classify(err) == down {
		b.cause.Store(&err)
	}
	b.nextProbe.Store(b.clk.Now().Add(b.interval).UnixNano())
}
