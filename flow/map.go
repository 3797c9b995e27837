package flow

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// DefaultWorkers is how many items a Map runs at once without Workers, and
// the size of a Pool made with NewPool(0). It matches a budget of 10 calls
// per second: more workers than that would only wait for the budget.
const DefaultWorkers = 10

// Pool caps, across every Map that uses it, how many helper goroutines run
// items at once. Share one Pool between Maps that call the same upstream so
// that concurrent and nested Maps cannot multiply the width. A Pool holds
// no goroutines of its own and needs no closing; it is safe for concurrent
// use.
//
// A Map's calling goroutine always works on the Map's items too, without
// taking a slot. That is what makes nested Maps on one Pool safe: a Map
// called from inside another Map's item runs on a goroutine that already
// holds a slot, so it makes progress on that goroutine even when every other
// slot is taken, instead of waiting for a slot that its own ancestors hold.
// The price is that up to one extra item per top-level Map call runs beyond
// the Pool's size.
type Pool struct {
	slots chan struct{}
}

// NewPool returns a Pool of size helper slots; size <= 0 means
// DefaultWorkers.
func NewPool(size int) *Pool {
	if size <= 0 {
		size = DefaultWorkers
	}
	return &Pool{slots: make(chan struct{}, size)}
}

// Size returns how many helper goroutines the Pool lets run at once.
func (p *Pool) Size() int { return cap(p.slots) }

// MapOption configures one Map call.
type MapOption func(*mapConfig)

type mapConfig struct {
	workers       int
	pool          *Pool
	cancelOnError bool
}

// Workers caps how many items of this Map run at once, its caller's
// goroutine included (default DefaultWorkers; n <= 0 means the default).
// Workers(1) runs every item on the caller's goroutine.
func Workers(n int) MapOption { return func(c *mapConfig) { c.workers = n } }

// WithPool makes the Map's helper goroutines take slots from p, which other
// Maps share. Workers still caps this Map alone.
func WithPool(p *Pool) MapOption { return func(c *mapConfig) { c.pool = p } }

// CancelOnError cancels the context passed to the other items as soon as
// one item fails. By default siblings are not cancelled: they may hold
// budget tokens already spent, and finishing them keeps their results.
func CancelOnError() MapOption { return func(c *mapConfig) { c.cancelOnError = true } }

func buildMapConfig(opts []MapOption) mapConfig {
	var c mapConfig
	for _, opt := range opts {
		opt(&c)
	}
	if c.workers <= 0 {
		c.workers = DefaultWorkers
	}
	return c
}

// PanicError is the error a Map, Sweep or Retry returns in place of a
// panic in the function it runs.
type PanicError struct {
	// Index is the item whose function panicked, or -1.
	Index int
	// Value is what was passed to panic.
	Value any
	// Stack is the panicking goroutine's stack.
	Stack []byte
}

func (e *PanicError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("flow: panic: %v\n\n%s", e.Value, e.Stack)
	}
	return fmt.Sprintf("flow: panic in item %d: %v\n\n%s", e.Index, e.Value, e.Stack)
}

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// protect calls fn, turning a panic into a *PanicError.
func protect[T, R any](ctx context.Context, i int, item T, fn func(context.Context, T) (R, error)) (r R, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Index: i, Value: v, Stack: debug.Stack()}
		}
	}()
	return fn(ctx, item)
}

// Map calls fn for every item and returns the results in input order.
//
// The contract:
//   - At most Workers items run at once (default 10), and with WithPool the
//     helper goroutines also take slots from a shared Pool. The calling
//     goroutine runs items too.
//   - No items: an empty slice and nil. One item, or Workers(1): every item
//     runs on the caller's goroutine, one after another, with no goroutines
//     started.
//   - Items start in input order. When an item fails, no new item starts;
//     Map waits for every item already running, then returns the error of
//     the failed item that comes first in input order. Running siblings are
//     not cancelled unless CancelOnError is given.
//   - A panic in fn is recovered and returned as a *PanicError carrying the
//     stack.
//   - Once ctx ends, Map starts no new item; it waits for the running ones and
//     returns the first item error by input order, or else ctx's error.
//   - The results slice is always len(items) long: values of items that did
//     not run, or failed, are whatever fn returned or the zero value.
//   - A Map called from inside another Map's item, on the same Pool,
//     cannot deadlock (see Pool).
func Map[T, R any](ctx context.Context, items []T, fn func(context.Context, T) (R, error), opts ...MapOption) ([]R, error) {
	cfg := buildMapConfig(opts)
	results := make([]R, len(items))
	if len(items) == 0 {
		return results, nil
	}
	if len(items) == 1 || cfg.workers == 1 {
		return results, mapInline(ctx, items, fn, results)
	}
	m := newMapRun(ctx, items, fn, results, cfg)
	return results, m.run(cfg)
}

func mapInline[T, R any](ctx context.Context, items []T, fn func(context.Context, T) (R, error), results []R) error {
	for i, item := range items {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := protect(ctx, i, item, fn)
		results[i] = r
		if err != nil {
			return err
		}
	}
	return nil
}

// mapRun is one parallel Map call. Items are claimed through an atomic
// cursor, so they start in input order whichever goroutine claims them.
type mapRun[T, R any] struct {
	parent  context.Context
	ctx     context.Context
	cancel  context.CancelCauseFunc
	items   []T
	fn      func(context.Context, T) (R, error)
	results []R
	next    atomic.Int64
	mu      sync.Mutex
	errAt   int           // index of the first failed item by input order, or -1
	err     error         // its error
	halt    atomic.Bool   // set by the first failure or when ctx ends
	drained chan struct{} // closed once no item is left to claim
	once    sync.Once
	wg      sync.WaitGroup
}

func newMapRun[T, R any](ctx context.Context, items []T, fn func(context.Context, T) (R, error), results []R, cfg mapConfig) *mapRun[T, R] {
	m := &mapRun[T, R]{parent: ctx, ctx: ctx, items: items, fn: fn, results: results,
		errAt: -1, drained: make(chan struct{})}
	if cfg.cancelOnError {
		m.ctx, m.cancel = context.WithCancelCause(ctx)
	}
	return m
}

func (m *mapRun[T, R]) run(cfg mapConfig) error {
	// One atomic flag for "stop claiming", instead of asking ctx per item
	// (a cancelCtx's Err takes a lock).
	stop := context.AfterFunc(m.ctx, func() { m.halt.Store(true) })
	defer stop()
	if m.ctx.Err() != nil {
		m.halt.Store(true)
	}
	helpers := min(cfg.workers, len(m.items)) - 1
	for range helpers {
		m.wg.Add(1)
		go m.help(cfg.pool)
	}
	m.work()
	m.wg.Wait()
	if m.cancel != nil {
		m.cancel(nil)
	}
	if m.err != nil {
		return m.err
	}
	if int(m.next.Load()) < len(m.items) {
		return m.parent.Err()
	}
	return nil
}

// help works on items as an extra goroutine, first taking a pool slot if
// there is a pool. It gives up waiting for a slot once nothing is left.
func (m *mapRun[T, R]) help(pool *Pool) {
	defer m.wg.Done()
	if pool != nil {
		select {
		case pool.slots <- struct{}{}:
			defer func() { <-pool.slots }()
		case <-m.drained:
			return
		}
	}
	m.work()
}

// work runs items until none is left. A panic ends only the item that
// raised it: run recovers it and work carries on with the next item (which
// claim refuses, since the panic counts as a failure).
func (m *mapRun[T, R]) work() {
	for m.run1() {
	}
	m.once.Do(func() { close(m.drained) })
}

// run1 runs items until none is left (false) or one panics (true). The
// deferred recover is paid once per run of items, not once per item.
func (m *mapRun[T, R]) run1() (panicked bool) {
	i := -1
	defer func() {
		if v := recover(); v != nil {
			m.fail(i, &PanicError{Index: i, Value: v, Stack: debug.Stack()})
			panicked = true
		}
	}()
	for {
		var ok bool
		if i, ok = m.claim(); !ok {
			return false
		}
		r, err := m.fn(m.ctx, m.items[i])
		m.results[i] = r
		if err != nil {
			m.fail(i, err)
		}
	}
}

// fail records item i's error if it is the first by input order so far,
// and stops new items from starting.
func (m *mapRun[T, R]) fail(i int, err error) {
	m.mu.Lock()
	if m.errAt < 0 || i < m.errAt {
		m.errAt, m.err = i, err
	}
	m.mu.Unlock()
	m.halt.Store(true)
	if m.cancel != nil {
		m.cancel(err)
	}
}

func (m *mapRun[T, R]) claim() (int, bool) {
	if m.halt.Load() {
		return 0, false
	}
	i := int(m.next.Add(1) - 1)
	if i >= len(m.items) {
		return 0, false
	}
	return i, true
}
