package httplimit_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// epoch is a fake-clock start aligned to every window the tests use, so a
// fresh window has exactly its length left.
var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// store is memlimit on a fake clock, counting the calls that reach it so
// tests can tell a pass-through from a limit that counted.
type store struct {
	*memlimit.Store
	clock *clock.Fake
	calls atomic.Int64
}

func newStore(t testing.TB) *store {
	c := clock.NewFake(epoch)
	s := &store{Store: memlimit.New(memlimit.Options{Clock: c, SweepInterval: -1}), clock: c}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func (s *store) Consume(ctx context.Context, reqs ...ratelimit.Request) (ratelimit.Decision, error) {
	s.calls.Add(1)
	// The limiter's 100 ms store timeout is about outages, not about a
	// loaded test machine descheduling this goroutine: an in-process store
	// must decide here even when the deadline passed while it waited to run.
	return s.Store.Consume(context.WithoutCancel(ctx), reqs...)
}

func (s *store) Calls() int { return int(s.calls.Load()) }

// downStore fails every call the way an unreachable store does.
type downStore struct{}

func (downStore) Consume(_ context.Context, reqs ...ratelimit.Request) (ratelimit.Decision, error) {
	if err := ratelimit.ValidateRequests(reqs); err != nil {
		return ratelimit.Decision{}, err
	}
	return ratelimit.Decision{}, &ratelimit.StoreError{Op: "consume", Err: errors.New("connection refused")}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
