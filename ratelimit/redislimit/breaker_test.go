package redislimit_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
)

// sentCounter counts the commands (and pipelines) that reach the network:
// added to a client after the Store, it sits inside the breaker.
type sentCounter struct{ n atomic.Int64 }

func (c *sentCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *sentCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *sentCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.n.Add(1); return next(ctx, cmds) }
}

// outageStore returns a store on a client whose Redis refuses connections
// (retries off, so each failure is quick), the client's address, and a
// counter of the commands that reach the network.
func outageStore(t *testing.T, opts redislimit.Options) (*redislimit.Store, string, *sentCounter) {
	t.Helper()
	addr := deadAddr(t)
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = c.Close() })
	s, err := redislimit.New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	sent := &sentCounter{}
	c.AddHook(sent)
	return s, addr, sent
}

// TestOutageFailsFast: once at most DefaultBreakerFailures calls have
// failed, decisions fail at once with ErrBreakerOpen, without touching the
// network, and the failure modes answer.
func TestOutageFailsFast(t *testing.T) {
	t.Parallel()
	for _, batching := range []bool{true, false} {
		s, _, sent := outageStore(t, redislimit.Options{DisableBatching: !batching, Clock: fakeClock()})
		l := ratelimit.PerMinute(10)
		// Failed dials count too, so the breaker may open before
		// DefaultBreakerFailures calls have failed, never after.
		for i := 1; ; i++ {
			_, err := s.Consume(t.Context(), req("k", l, 1))
			if errors.Is(err, redislimit.ErrBreakerOpen) {
				break
			}
			if !errors.Is(err, ratelimit.ErrStoreUnavailable) || i > redislimit.DefaultBreakerFailures {
				t.Fatalf("batching %v: call %d = %v, want the network error, then ErrBreakerOpen within %d calls", batching, i, err, redislimit.DefaultBreakerFailures)
			}
		}
		before := sent.n.Load()
		for range 100 {
			_, err := s.Consume(t.Context(), req("k", l, 1))
			if !errors.Is(err, ratelimit.ErrStoreUnavailable) || !errors.Is(err, redislimit.ErrBreakerOpen) {
				t.Fatalf("batching %v: call while open = %v, want ErrBreakerOpen and ErrStoreUnavailable", batching, err)
			}
		}
		if err := s.Ping(t.Context()); !errors.Is(err, redislimit.ErrBreakerOpen) {
			t.Errorf("batching %v: Ping while open = %v, want ErrBreakerOpen", batching, err)
		}
		if got := sent.n.Load(); got != before {
			t.Errorf("batching %v: %d commands reached the network while open, want 0", batching, got-before)
		}
		for _, mode := range []ratelimit.FailureMode{ratelimit.FailOpen, ratelimit.FailClosed} {
			lim, err := ratelimit.Define(s, ratelimit.Definition[string]{
				Scene: "outage", Subject: func(id string) []string { return []string{"team", id} },
				Limits: func(string) []ratelimit.Limit { return []ratelimit.Limit{l} }, FailureMode: mode,
			}, ratelimit.WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				t.Fatal(err)
			}
			v, err := lim.Check(t.Context(), "t")
			if err != nil || v.Allowed != (mode == ratelimit.FailOpen) || !errors.Is(v.Fault, redislimit.ErrBreakerOpen) {
				t.Errorf("batching %v, fail %s: %+v, %v", batching, mode, v, err)
			}
		}
	}
}

// TestBreakerRecovers: a Redis that starts listening at the address is
// found by the next probe after the interval (on the store's clock), and
// decisions come from it again without a new Store.
func TestBreakerRecovers(t *testing.T) {
	t.Parallel()
	clk := fakeClock()
	s, addr, sent := outageStore(t, redislimit.Options{Clock: clk, BreakerFailures: 1, BreakerProbeInterval: time.Second})
	l := ratelimit.PerMinute(10)
	if _, err := s.Consume(t.Context(), req("k", l, 1)); err == nil {
		t.Fatal("Consume with Redis down succeeded")
	}
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr(addr); err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	t.Cleanup(m.Close)
	if _, err := s.Consume(t.Context(), req("k", l, 1)); !errors.Is(err, redislimit.ErrBreakerOpen) || sent.n.Load() != 1 {
		t.Fatalf("before the probe is due: %v, %d sent; want ErrBreakerOpen and nothing sent", err, sent.n.Load())
	}
	// go-redis's pool may repeat its last dial error for up to a second
	// of real time after Redis is back; probe until Redis answers.
	var d ratelimit.Decision
	testutil.Eventually(t, "a decision after Redis came back", func() (err error) {
		clk.Advance(time.Second)
		d, err = s.Consume(t.Context(), req("k", l, 1))
		return err
	})
	if !d.Allowed || d.Results[0].Used != 1 {
		t.Errorf("first decision after recovery: %+v", d)
	}
}

// TestDisableBreaker: without the breaker every call goes to the network.
func TestDisableBreaker(t *testing.T) {
	t.Parallel()
	s, _, sent := outageStore(t, redislimit.Options{DisableBreaker: true})
	for range 10 {
		if _, err := s.Consume(t.Context(), req("k", ratelimit.PerMinute(1), 1)); errors.Is(err, redislimit.ErrBreakerOpen) {
			t.Fatalf("ErrBreakerOpen with the breaker disabled: %v", err)
		}
	}
	if sent.n.Load() != 10 {
		t.Errorf("%d commands sent, want 10", sent.n.Load())
	}
}

func TestBreakerOptionsChecked(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: deadAddr(t)})
	defer c.Close()
	for _, o := range []redislimit.Options{{BreakerFailures: -1}, {BreakerProbeInterval: -time.Second}} {
		if _, err := redislimit.New(c, o); !errors.Is(err, ratelimit.ErrInvalidArgument) {
			t.Errorf("New(%+v) = %v, want ErrInvalidArgument", o, err)
		}
	}
}
