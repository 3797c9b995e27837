package flow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
)

// Sweep defaults.
const (
	// DefaultMaxItems caps a sweep: 93 items (a quarter of a year of
	// dates) is already a lot of upstream calls, and a typo such as a whole
	// year must not quietly become hundreds.
	DefaultMaxItems = 93
	// DefaultTripAfter is how many blocked failures, with no success yet,
	// trip a sweep's breaker.
	DefaultTripAfter = 5
)

var (
	// ErrBlocked is matched by errors marked with Blocked.
	ErrBlocked = errors.New("flow: blocked")
	// ErrNoResult is what a Sweep function returns when its call worked
	// but the item has nothing in it (a search with no hits). The item
	// counts as loaded, not failed.
	ErrNoResult = errors.New("flow: no result")
	// ErrTooManyItems is matched by the error of a Sweep over more items
	// than its cap. No call was made.
	ErrTooManyItems = errors.New("flow: too many items")
	// ErrSweepFailed is matched by *SweepError.
	ErrSweepFailed = errors.New("flow: sweep failed")
)

type blockedError struct{ err error }

func (e *blockedError) Error() string        { return e.err.Error() }
func (e *blockedError) Unwrap() error        { return e.err }
func (e *blockedError) Is(target error) bool { return target == ErrBlocked }

// Blocked marks err as a deterministic failure: the upstream answered, but
// with something that holds no data and will answer the same way for the
// next item (a consent page, a captcha, a block page). Only such failures
// count toward a Sweep's breaker; timeouts and connection errors say
// nothing about the next item and must not be marked. Blocked(nil) is nil.
func Blocked(err error) error {
	if err == nil {
		return nil
	}
	return &blockedError{err: err}
}

// SweepOption configures one Sweep call.
type SweepOption func(*sweepConfig)

type sweepConfig struct {
	maxItems  int
	tripAfter int
	noun      string
	logger    *slog.Logger
	mapOpts   []MapOption
}

// MaxItems sets the sweep's item cap, checked before any call (default
// DefaultMaxItems, 93; n <= 0 means the default).
func MaxItems(n int) SweepOption { return func(c *sweepConfig) { c.maxItems = n } }

// TripAfter sets how many blocked failures, with no success yet, trip the
// breaker (default DefaultTripAfter, 5; n <= 0 means the default).
func TripAfter(n int) SweepOption { return func(c *sweepConfig) { c.tripAfter = n } }

// ItemName names the items in messages, such as "date" (default "item");
// the plural adds an "s".
func ItemName(singular string) SweepOption { return func(c *sweepConfig) { c.noun = singular } }

// SweepLogger sets where the partial-sweep warning is logged (default
// slog.Default()).
func SweepLogger(l *slog.Logger) SweepOption { return func(c *sweepConfig) { c.logger = l } }

// SweepMapOptions passes options to the Map that runs the sweep, such as
// Workers or WithPool (default 10 workers, no pool).
func SweepMapOptions(opts ...MapOption) SweepOption {
	return func(c *sweepConfig) { c.mapOpts = append(c.mapOpts, opts...) }
}

func buildSweepConfig(opts []SweepOption) sweepConfig {
	c := sweepConfig{maxItems: DefaultMaxItems, tripAfter: DefaultTripAfter, noun: "item"}
	for _, opt := range opts {
		opt(&c)
	}
	if c.maxItems <= 0 {
		c.maxItems = DefaultMaxItems
	}
	if c.tripAfter <= 0 {
		c.tripAfter = DefaultTripAfter
	}
	if c.noun == "" {
		c.noun = "item"
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	return c
}

// breaker is the sweep-health rule: it trips after threshold blocked
// failures while nothing has succeeded, and the first success disarms it
// for good, so a healthy sweep keeps its full retry budget.
type breaker struct {
	mu        sync.Mutex
	threshold int
	blocked   int
	disarmed  bool
	tripped   bool
}

func (b *breaker) open() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tripped
}

func (b *breaker) record(st Status, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case st == Loaded || st == NoResult:
		b.disarmed = true
	case b.disarmed || b.tripped || !errors.Is(err, ErrBlocked):
	default:
		b.blocked++
		b.tripped = b.blocked >= b.threshold
	}
}

// Sweep calls fn once per item, as a Map (default 10 workers), for work
// where every item costs one upstream call and a failure may repeat for
// every item: prices per date, pages, ids.
//
// Before any call, more than the cap (default 93) items is refused with an
// ErrTooManyItems error. While running, a breaker watches failures marked
// with Blocked: after 5 of them with no success yet it trips, and the items
// not yet started are skipped without a call. The first success disarms it
// for good. fn returns ErrNoResult for an item that loaded but holds
// nothing; a panic in fn fails its item with a *PanicError.
//
// The outcome, in order:
//   - nothing loaded and something failed (a dead transport, a block): a
//     *SweepError naming attempted, failed and skipped counts and the top
//     reasons; a dead transport is never reported as "no results";
//   - no results, and the breaker tripped or at least as many items failed
//     as loaded: a *SweepError, since so few loaded items cannot show that
//     there are none;
//   - otherwise nil, with SweepResult.Warning set to one line (logged once
//     at warn level) when any item failed or was skipped.
//
// If ctx ends first, the items not started are left Pending and ctx's
// error is returned. The result is returned with every error but the cap's.
func Sweep[T, R any](ctx context.Context, items []T, fn func(context.Context, T) (R, error), opts ...SweepOption) (*SweepResult[R], error) {
	cfg := buildSweepConfig(opts)
	if len(items) > cfg.maxItems {
		return nil, fmt.Errorf("%w: %s exceed the cap of %d per sweep; narrow the range",
			ErrTooManyItems, count(len(items), cfg.noun), cfg.maxItems)
	}
	res := &SweepResult[R]{Items: make([]SweepItem[R], len(items))}
	br := &breaker{threshold: cfg.tripAfter}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	_, err := Map(ctx, idx, func(ctx context.Context, i int) (struct{}, error) {
		res.Items[i] = sweepOne(ctx, br, i, items[i], fn)
		return struct{}{}, nil
	}, cfg.mapOpts...)
	res.tally(br.open())
	if err != nil {
		return res, fmt.Errorf("flow: sweep stopped after %d of %s: %w", res.Attempted, count(len(items), cfg.noun), err)
	}
	return res, res.judge(ctx, cfg)
}

func sweepOne[T, R any](ctx context.Context, br *breaker, i int, item T, fn func(context.Context, T) (R, error)) SweepItem[R] {
	if br.open() {
		return SweepItem[R]{Status: Skipped}
	}
	v, err := protect(ctx, i, item, fn)
	st := Loaded
	switch {
	case errors.Is(err, ErrNoResult):
		st, err = NoResult, nil
	case err != nil:
		st = Failed
	}
	br.record(st, err)
	return SweepItem[R]{Value: v, Err: err, Status: st}
}
