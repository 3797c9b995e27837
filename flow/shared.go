package flow

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/fifo"
	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/ratelimit"
)

// SharedBudgetNamespace is the keyspace namespace of shared budgets' keys:
// a budget named "search" counts under "flow:budget:{search}".
const SharedBudgetNamespace = "flow"

// TryTakeTimeout bounds the store call of SharedBudget.TryTake, which has
// no context.
const TryTakeTimeout = time.Second

// SharedBudget is a Budget kept in a ratelimit.Store, so every process using
// the same store (and name) draws from one budget: a fleet-wide calls per
// period. It counts with the store's token bucket (GCRA, starting full with
// capacity calls) and, when denied, sleeps for the RetryAfter the store
// returned and asks again.
//
// Within a process waiters are served in strict arrival order (only the
// longest waiter asks the store); across processes the store decides who
// comes first. Store faults are returned, matching
// ratelimit.ErrStoreUnavailable: the caller decides whether to call
// anyway. It is safe for concurrent use.
type SharedBudget struct {
	store    ratelimit.Store
	name     string
	key      string
	limit    ratelimit.Limit
	capacity int
	clock    clock.Clock
	turn     *fifo.Semaphore // one Wait at a time, in arrival order
	waiters  atomic.Int64    // Wait calls in progress
}

var _ Limiter = (*SharedBudget)(nil)

// NewSharedBudget returns the budget called name, of calls per period, kept
// in store. Every process must use the same calls and per for a name. per
// must be a whole number of milliseconds (at least 1ms), as for any
// ratelimit.Limit.
func NewSharedBudget(store ratelimit.Store, name string, calls int, per time.Duration, opts ...BudgetOption) (*SharedBudget, error) {
	if store == nil {
		return nil, invalidArg("store", "must not be nil")
	}
	if name == "" {
		return nil, invalidArg("name", "must not be empty")
	}
	if err := validateBudget(calls, per); err != nil {
		return nil, err
	}
	limit := ratelimit.Limit{Quota: int64(calls), Window: per, Algorithm: ratelimit.TokenBucket}
	if err := limit.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	key, err := keyspace.JoinTagged(SharedBudgetNamespace, 1, 2, "budget", name)
	if err != nil {
		return nil, fmt.Errorf("%w: name: %w", ErrInvalidArgument, err)
	}
	cfg := buildBudgetConfig(opts)
	return &SharedBudget{store: store, name: name, key: key, limit: limit, capacity: calls, clock: cfg.clock, turn: fifo.New(1)}, nil
}

// Name returns the budget's name.
func (s *SharedBudget) Name() string { return s.name }

// Key returns the logical key the store counts under.
func (s *SharedBudget) Key() string { return s.key }

// Capacity returns the most calls the budget admits at once.
func (s *SharedBudget) Capacity() int { return s.capacity }

// Wait blocks until n calls may start, with the same contract as
// Budget.Wait, plus: a store fault ends the wait with an error matching
// ratelimit.ErrStoreUnavailable. The deadline check uses the store's
// RetryAfter, so a wait is refused as soon as the store says it cannot
// finish in time.
func (s *SharedBudget) Wait(ctx context.Context, n int) error {
	if n <= 0 {
		return nil
	}
	if n > s.capacity {
		return overCapacity(n, s.capacity)
	}
	s.waiters.Add(1)
	defer s.waiters.Add(-1)
	if err := s.turn.Acquire(ctx); err != nil {
		return err
	}
	defer s.turn.Release()
	for {
		d, err := s.consume(ctx, n)
		if err != nil || d.Allowed {
			return err
		}
		wait := max(d.RetryAfter, time.Millisecond)
		if err := exceedsDeadline(ctx, wait); err != nil {
			return err
		}
		if err := sleep(ctx, s.clock, wait); err != nil {
			return err
		}
	}
}

// TryTake takes n calls if the store has them now and no Wait in this
// process is waiting ahead. A store fault, or a store slower than
// TryTakeTimeout, reads as false; use Take to see the error.
func (s *SharedBudget) TryTake(n int) bool {
	ctx, cancel := context.WithTimeout(context.Background(), TryTakeTimeout)
	defer cancel()
	ok, err := s.Take(ctx, n)
	return err == nil && ok
}

// Take is TryTake with a context and the store's error: it takes n calls
// if the store has them now and no Wait in this process is waiting ahead,
// and never waits for the budget.
func (s *SharedBudget) Take(ctx context.Context, n int) (bool, error) {
	if n <= 0 {
		return true, nil
	}
	if n > s.capacity {
		return false, overCapacity(n, s.capacity)
	}
	if s.waiters.Load() > 0 {
		return false, nil
	}
	d, err := s.consume(ctx, n)
	return err == nil && d.Allowed, err
}

func (s *SharedBudget) consume(ctx context.Context, n int) (ratelimit.Decision, error) {
	if err := ctx.Err(); err != nil {
		return ratelimit.Decision{}, err
	}
	d, err := s.store.Consume(ctx, ratelimit.Request{Key: s.key, Limit: s.limit, Cost: int64(n)})
	if err != nil {
		return d, fmt.Errorf("flow: shared budget %q: %w", s.name, err)
	}
	return d, nil
}
