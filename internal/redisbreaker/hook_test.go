package redisbreaker

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/testutil"
)

// counter counts the commands that get past every hook added before it.
type counter struct{ n atomic.Int64 }

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.n.Add(1); return next(ctx, cmds) }
}

// TestClientRecoversWithoutRestart runs a real client against an address
// nobody listens on, then starts a Redis there: the breaker stops the
// client's commands from reaching the network while open, and closes by
// itself once a probe is answered.
func TestClientRecoversWithoutRestart(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1})
	defer c.Close()
	clk := clock.NewFake(epoch)
	b, err := Attach(c, Options{Failures: 2, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	sent := &counter{}
	c.AddHook(sent) // inside the breaker: counts what it lets through
	ctx := t.Context()
	// One GET makes two failures: its failed dial and itself.
	if err := c.Get(ctx, "k").Err(); err == nil || errors.Is(err, ErrOpen) {
		t.Fatalf("GET before the breaker opened: %v, want the dial error", err)
	}
	for range 50 {
		if err := c.Get(ctx, "k").Err(); !errors.Is(err, ErrOpen) {
			t.Fatalf("GET while open: %v, want ErrOpen", err)
		}
		if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error { p.Get(ctx, "k"); return nil }); !errors.Is(err, ErrOpen) {
			t.Fatalf("pipeline while open: %v, want ErrOpen", err)
		}
	}
	if n := sent.n.Load(); n != 1 {
		t.Fatalf("%d commands went past the breaker, want 1 (none while open)", n)
	}
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr(addr); err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	defer m.Close()
	// The pool itself may hold on to its last dial error for a while
	// (go-redis probes the address once a second), so probe until Redis
	// answers.
	testutil.Eventually(t, "the breaker to close after Redis came back", func() bool {
		if !b.Open() {
			return true
		}
		clk.Advance(DefaultProbeInterval)
		_ = c.Ping(ctx).Err()
		return false
	})
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET after recovery: %v", err)
	}
}
