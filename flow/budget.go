package flow

import (
	"context"
	"time"

	"golang.org/x/time/rate"

	"github.com/sluicehq/sluice/clock"
)

// Limiter is a call budget: what Retry, Transport and Sweep callers take
// from before each call. *Budget (one process) and *SharedBudget (a fleet,
// through a ratelimit.Store) implement it.
type Limiter interface {
	// Wait blocks until n calls may start, in arrival order. It returns nil
	// at once for n <= 0, an ErrOverCapacity error for n above the
	// capacity, an ErrWouldExceedDeadline error (at once) when the wait
	// cannot finish before ctx's deadline, and ctx's error when ctx ends
	// first.
	Wait(ctx context.Context, n int) error
	// TryTake takes n calls if they are available now, without waiting
	// and without passing anyone already waiting. It reports whether it
	// took them; n <= 0 always succeeds.
	TryTake(n int) bool
}

// BudgetOption configures NewBudget and NewSharedBudget.
type BudgetOption func(*budgetConfig)

type budgetConfig struct {
	clock clock.Clock
}

// WithClock makes the budget read time and sleep on c instead of the system
// clock, so tests can advance time instead of sleeping.
func WithClock(c clock.Clock) BudgetOption {
	return func(cfg *budgetConfig) { cfg.clock = c }
}

func buildBudgetConfig(opts []BudgetOption) budgetConfig {
	var cfg budgetConfig
	for _, opt := range opts {
		opt(&cfg)
	}
	cfg.clock = clock.Or(cfg.clock)
	return cfg
}

// Budget is a token bucket of calls per period for one process: it starts
// full with capacity calls and refills at calls/per. Waiters are served in
// strict arrival order: a later Wait, however small, never starts before an
// earlier one. It is safe for concurrent use; create one per upstream and
// share it (see the package documentation).
type Budget struct {
	lim      *rate.Limiter
	clock    clock.Clock
	capacity int
	per      time.Duration
}

var _ Limiter = (*Budget)(nil)

// NewBudget returns a full budget of calls per period. calls and per must be
// positive.
func NewBudget(calls int, per time.Duration, opts ...BudgetOption) (*Budget, error) {
	if err := validateBudget(calls, per); err != nil {
		return nil, err
	}
	cfg := buildBudgetConfig(opts)
	r := rate.Limit(float64(calls) / per.Seconds())
	// rate.NewLimiter starts with a full bucket of burst tokens.
	return &Budget{lim: rate.NewLimiter(r, calls), clock: cfg.clock, capacity: calls, per: per}, nil
}

func validateBudget(calls int, per time.Duration) error {
	if calls <= 0 {
		return invalidArg("calls", "must be a positive integer, got %d", calls)
	}
	if per <= 0 {
		return invalidArg("per", "must be a positive duration, got %s", per)
	}
	return nil
}

// Capacity returns the most calls the budget admits at once.
func (b *Budget) Capacity() int { return b.capacity }

// Per returns the period in which the budget refills completely.
func (b *Budget) Per() time.Duration { return b.per }

// Wait blocks until n calls may start. Waiters are served in strict arrival
// order: each Wait reserves its place (and its tokens) when it is called.
// It returns nil at once for n <= 0; an ErrOverCapacity error for n above
// the capacity; an ErrWouldExceedDeadline error, at once and without
// taking anything, when the wait would outlast ctx's deadline; and ctx's
// error when ctx ends while waiting, giving its place back.
func (b *Budget) Wait(ctx context.Context, n int) error {
	if n <= 0 {
		return nil
	}
	if n > b.capacity {
		return overCapacity(n, b.capacity)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	now := b.clock.Now()
	r := b.lim.ReserveN(now, n)
	delay := r.DelayFrom(now)
	if delay == 0 {
		return nil
	}
	if err := exceedsDeadline(ctx, delay); err != nil {
		r.CancelAt(now)
		return err
	}
	t := b.clock.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		r.CancelAt(b.clock.Now())
		return ctx.Err()
	}
}

// TryTake takes n calls if they are available now and nobody is waiting
// ahead; it never waits. n <= 0 always succeeds; n above the capacity never
// does.
func (b *Budget) TryTake(n int) bool {
	if n <= 0 {
		return true
	}
	return b.lim.AllowN(b.clock.Now(), n)
}

// Available returns how many calls could start now (negative while waiters
// hold reservations).
func (b *Budget) Available() float64 {
	return b.lim.TokensAt(b.clock.Now())
}
