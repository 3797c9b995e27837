package ratelimit_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

// TestMain checks that no test leaves a goroutine behind (memlimit stores
// in the examples run a sweeper until closed).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testStart is a fixed instant for fake clocks.
var testStart = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// newMem returns a memlimit store on a fake clock.
func newMem(t *testing.T) (*memlimit.Store, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(testStart)
	s := memlimit.New(memlimit.Options{Clock: clk, SweepInterval: -1})
	t.Cleanup(func() { s.Close() })
	return s, clk
}

// quiet keeps expected fault and shadow logs out of the test output.
var quiet = ratelimit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))

// faultyStore wraps a store and fails every call while down is set: the
// fault injector for outage tests.
type faultyStore struct {
	ratelimit.Store
	down  atomic.Bool
	calls atomic.Int64
}

var errDown = errors.New("connection refused")

func (f *faultyStore) Consume(ctx context.Context, reqs ...ratelimit.Request) (ratelimit.Decision, error) {
	f.calls.Add(1)
	if f.down.Load() {
		return ratelimit.Decision{}, errDown
	}
	return f.Store.Consume(ctx, reqs...)
}

// hungStore never answers: it blocks until the caller's context is done,
// like a Redis that accepted the connection and stalled.
type hungStore struct{}

func (hungStore) Consume(ctx context.Context, reqs ...ratelimit.Request) (ratelimit.Decision, error) {
	<-ctx.Done()
	return ratelimit.Decision{}, ctx.Err()
}

// recorder collects observer events.
type recorder struct {
	mu     sync.Mutex
	events []ratelimit.Event
}

func (r *recorder) observe(e ratelimit.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) all() []ratelimit.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ratelimit.Event(nil), r.events...)
}

func (r *recorder) last(t *testing.T) ratelimit.Event {
	t.Helper()
	ev := r.all()
	if len(ev) == 0 {
		t.Fatal("observer saw no event")
	}
	return ev[len(ev)-1]
}

// generous is a store timeout no load reaches: a decision a test checks
// must not turn into the failure mode because the machine is busy. A test
// of the timeout passes its own WithTimeout after it.
var generous = ratelimit.WithTimeout(testutil.Patience)

func mustDefine[T any](t *testing.T, s ratelimit.Store, def ratelimit.Definition[T], opts ...ratelimit.Option) *ratelimit.Limiter[T] {
	t.Helper()
	l, err := ratelimit.Define(s, def, append([]ratelimit.Option{quiet, generous}, opts...)...)
	if err != nil {
		t.Fatalf("Define: %v", err)
	}
	return l
}

func allow[T any](t *testing.T, l *ratelimit.Limiter[T], in T) bool {
	t.Helper()
	ok, err := l.Allow(context.Background(), in)
	if err != nil {
		t.Fatalf("Allow(%v): %v", in, err)
	}
	return ok
}
