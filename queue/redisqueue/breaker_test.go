package redisqueue_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
)

// sentCounter counts the commands (and pipelines) that reach the network:
// added to a client after the Backend, it sits inside the breaker.
type sentCounter struct{ n atomic.Int64 }

func (c *sentCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *sentCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *sentCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.n.Add(1); return next(ctx, cmds) }
}

// outageClient is a client on an address nobody listens on, with retries
// off so that each failure is quick.
func outageClient(t *testing.T) (*redis.Client, string) {
	t.Helper()
	addr := deadAddr(t)
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = c.Close() })
	return c, addr
}

// TestOutageFailsFast: once the breaker has opened, every kind of call
// fails at once with ErrBreakerOpen and sends nothing.
func TestOutageFailsFast(t *testing.T) {
	for _, batching := range []bool{true, false} {
		c, _ := outageClient(t)
		b, err := redisqueue.New(c, redisqueue.Options{Logger: quiet, Clock: clock.NewFake(epoch), DisableBatching: !batching})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		cl := queue.NewClient(b)
		ctx := t.Context()
		// New's CONFIG GET is the first failure.
		for i := 1; ; i++ {
			_, err := b.Stats(ctx)
			if errors.Is(err, redisqueue.ErrBreakerOpen) {
				break
			}
			if err == nil || i > redisqueue.DefaultBreakerFailures {
				t.Fatalf("batching %v: Stats %d with Redis down: %v, want ErrBreakerOpen after %d failures", batching, i, err, redisqueue.DefaultBreakerFailures)
			}
		}
		sent := &sentCounter{}
		c.AddHook(sent)
		calls := map[string]func() error{
			"Enqueue": func() error { _, err := cl.Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k"}); return err },
			"Lease": func() error {
				_, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, Max: 1, LeaseFor: time.Minute})
				return err
			},
			"Get":      func() error { _, err := b.Get(ctx, "1700000000000000-q"); return err },
			"Complete": func() error { return b.Complete(ctx, "1700000000000000-q", "tok", nil) },
			"Stats":    func() error { _, err := b.Stats(ctx); return err },
			"Ping":     func() error { return b.Ping(ctx) },
		}
		for name, call := range calls {
			for range 10 {
				if err := call(); !errors.Is(err, redisqueue.ErrBreakerOpen) {
					t.Fatalf("batching %v: %s while open = %v, want ErrBreakerOpen", batching, name, err)
				}
			}
		}
		if n := sent.n.Load(); n != 0 {
			t.Errorf("batching %v: %d commands reached the network while open, want 0", batching, n)
		}
	}
}

// TestBreakerRecovers: jobs are stored again once Redis listens, after the
// next probe on the backend's clock, without a new Backend.
func TestBreakerRecovers(t *testing.T) {
	c, addr := outageClient(t)
	clk := clock.NewFake(epoch)
	b, err := redisqueue.New(c, redisqueue.Options{Logger: quiet, Clock: clk, BreakerFailures: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	cl := queue.NewClient(b)
	ctx := t.Context()
	if _, err := cl.Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k"}); err == nil {
		t.Fatal("Enqueue with Redis down succeeded")
	}
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr(addr); err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	t.Cleanup(m.Close)
	if _, err := cl.Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k"}); !errors.Is(err, redisqueue.ErrBreakerOpen) {
		t.Fatalf("before the probe is due: %v, want ErrBreakerOpen", err)
	}
	// go-redis's pool may repeat its last dial error for up to a second
	// of real time after Redis is back; probe until Redis answers.
	testutil.Eventually(t, "an Enqueue after Redis came back", func() error {
		clk.Advance(redisqueue.DefaultBreakerProbeInterval)
		_, err := cl.Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k"})
		return err
	})
	st, err := b.Stats(ctx)
	if err != nil || len(st) != 1 || st[0].Counts[queue.StatePending] != 1 {
		t.Errorf("Stats after recovery = %+v, %v; want the one job stored", st, err)
	}
}

// TestOneBreakerPerClient: a limiter store and a job backend on one client
// share its breaker, so that an outage seen by one fails the other fast.
func TestOneBreakerPerClient(t *testing.T) {
	c, _ := outageClient(t)
	s, err := redislimit.New(c, redislimit.Options{DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	b, err := redisqueue.New(c, redisqueue.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	for range redislimit.DefaultBreakerFailures {
		_ = s.Ping(t.Context())
	}
	if _, err := b.Stats(t.Context()); !errors.Is(err, redisqueue.ErrBreakerOpen) {
		t.Errorf("job backend after the limiter's failures: %v, want ErrBreakerOpen", err)
	}
}
