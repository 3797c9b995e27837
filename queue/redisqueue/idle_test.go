package redisqueue_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// scriptCounter is a go-redis hook counting the scripts a client runs.
type scriptCounter struct{ n atomic.Int64 }

func (s *scriptCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s *scriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		s.count(cmd)
		return next(ctx, cmd)
	}
}

func (s *scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			s.count(c)
		}
		return next(ctx, cmds)
	}
}

func (s *scriptCounter) count(cmd redis.Cmder) {
	switch strings.ToLower(cmd.Name()) {
	case "eval", "evalsha", "fcall":
		s.n.Add(1)
	}
}

// TestIdleLeaseCostsNothing: once a worker's lease found its queue empty
// and its notifications are confirmed, leasing again runs no script until
// something is said: a job enqueued elsewhere (published), a job due later
// enqueued elsewhere (the timers channel) or here (at once), each then
// leased when ready.
func TestIdleLeaseCostsNothing(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			s := srv.open(t)
			clk := clock.NewFake(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
			c := s.client(t)
			var scripts scriptCounter
			c.AddHook(&scripts)
			be := s.backendOn(t, c, redisqueue.Options{Clock: clk})
			other := s.backend(t, redisqueue.Options{Clock: clk}) // another process
			ctx := context.Background()
			wake, stop := be.Subscribe([]string{"q"})
			defer stop()
			req := backend.LeaseRequest{Queues: []string{"q"}, WorkerID: "w", Max: 5, LeaseFor: time.Minute}
			lease := func() ([]queue.Lease, int64) {
				t.Helper()
				before := scripts.n.Load()
				ls, err := be.Lease(ctx, req)
				if err != nil {
					t.Fatalf("Lease: %v", err)
				}
				return ls, scripts.n.Load() - before
			}
			// quiet waits until a lease runs no script: the subscriptions
			// are confirmed and nothing was said since the last lease.
			quiet := func(what string) {
				t.Helper()
				deadline := time.Now().Add(10 * time.Second)
				for {
					ls, n := lease()
					if len(ls) > 0 {
						t.Fatalf("%s: leased %d jobs, want none", what, len(ls))
					}
					if n == 0 {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: every lease still runs a script", what)
					}
					time.Sleep(time.Millisecond)
				}
			}
			quiet("idle")
			for range 10 {
				if _, n := lease(); n != 0 {
					t.Fatalf("an idle lease ran %d scripts, want 0", n)
				}
			}

			if _, err := other.Enqueue(ctx, []queue.JobSpec{{Queue: "q", Kind: "k"}}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-wake:
			case <-time.After(10 * time.Second):
				t.Fatal("no wake-up for a job enqueued elsewhere")
			}
			if ls, _ := lease(); len(ls) != 1 {
				t.Fatalf("after the wake-up leased %d jobs, want 1", len(ls))
			}
			quiet("after the lease")

			// A job due in a minute, enqueued elsewhere: the timers channel
			// makes the next lease look, and it holds off until the minute.
			if _, err := other.Enqueue(ctx, []queue.JobSpec{{Queue: "q", Kind: "k", RunAt: clk.Now().Add(time.Minute)}}); err != nil {
				t.Fatal(err)
			}
			looked := time.Now().Add(10 * time.Second)
			for {
				if _, n := lease(); n > 0 {
					break
				}
				if time.Now().After(looked) {
					t.Fatal("no lease looked after a job due later was enqueued elsewhere")
				}
				time.Sleep(time.Millisecond)
			}
			quiet("a job due later")
			clk.Advance(time.Minute)
			if ls, _ := lease(); len(ls) != 1 {
				t.Fatalf("once due, leased %d jobs, want 1", len(ls))
			}
			quiet("after the due job")

			// The same from this process: the next lease looks at once.
			if _, err := be.Enqueue(ctx, []queue.JobSpec{{Queue: "q", Kind: "k", RunAt: clk.Now().Add(time.Second)}}); err != nil {
				t.Fatal(err)
			}
			if _, n := lease(); n != 1 {
				t.Errorf("the lease after a local job due later ran %d scripts, want 1", n)
			}
			clk.Advance(time.Second)
			if ls, _ := lease(); len(ls) != 1 {
				t.Errorf("once due, leased %d jobs, want 1", len(ls))
			}
		})
	}
}
