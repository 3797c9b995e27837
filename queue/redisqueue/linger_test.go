package redisqueue_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// pipeCounter counts the pipelines a client sends and the largest one.
type pipeCounter struct{ pipes, largest atomic.Int64 }

func (p *pipeCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (p *pipeCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (p *pipeCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		p.pipes.Add(1)
		for n := int64(len(cmds)); ; {
			old := p.largest.Load()
			if n <= old || p.largest.CompareAndSwap(old, n) {
				break
			}
		}
		return next(ctx, cmds)
	}
}

// leaseOne enqueues a job on queue q and leases it.
func leaseOne(t *testing.T, b *redisqueue.Backend, q string) queue.Lease {
	t.Helper()
	ctx := context.Background()
	mustEnqueue(t, queue.NewClient(b), queue.JobSpec{Queue: q, Kind: "k"})
	ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{q}, Max: 1, LeaseFor: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("Lease = %d jobs, %v; want 1", len(ls), err)
	}
	return ls[0]
}

// completeInBackground completes l as a Worker does, in a goroutine, and
// waits until the call lingers in b's line.
func completeInBackground(t *testing.T, b *redisqueue.Backend, l queue.Lease) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		done <- b.Complete(queue.BackgroundWrite(context.Background()), l.Job.ID, l.Token, []byte("r"))
	}()
	waitFor(t, "the completion to linger", func() bool { return redisqueue.LingeringCalls(b) == 1 })
	return done
}

// waitFor polls cond until it holds, failing the test after a deadline no
// loaded machine reaches.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func wantCompleted(t *testing.T, b *redisqueue.Backend, done <-chan error, id string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Complete = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Complete did not return")
	}
	j, err := b.Get(context.Background(), id)
	if err != nil || j.State != queue.StateCompleted || string(j.Result) != "r" {
		t.Fatalf("Get = %+v, %v; want completed with result r", j, err)
	}
}

// TestCompleteRidesWithNextCall: a worker's completion waits for the
// next call of its Backend and goes out in the same round trip.
func TestCompleteRidesWithNextCall(t *testing.T) {
	for _, lean := range []bool{true, false} {
		t.Run(map[bool]string{true: "lean", false: "full"}[lean], func(t *testing.T) {
			forEachServer(t, func(t *testing.T, s server) {
				c := s.client(t)
				var pc pipeCounter
				c.AddHook(&pc)
				b := s.backendOn(t, c, redisqueue.Options{CompleteLinger: time.Hour})
				if !lean {
					redisqueue.DisableLean(b)
				}
				l := leaseOne(t, b, "ride")
				done := completeInBackground(t, b, l)
				select {
				case err := <-done:
					t.Fatalf("Complete returned %v with an hour to linger and no other call", err)
				default:
				}
				pc.pipes.Store(0)
				pc.largest.Store(0)
				leaseOne(t, b, "ride") // an enqueue, then a lease: the completion goes with the first
				wantCompleted(t, b, done, l.Job.ID)
				if got := pc.largest.Load(); got < 2 {
					t.Errorf("largest pipeline after the completion lingered: %d calls; want the completion with another call", got)
				}
			})
		})
	}
}

// TestCompleteRidesWithLease: a lease (sent outside the batcher) takes the
// lingering completion along.
func TestCompleteRidesWithLease(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		b := s.backend(t, redisqueue.Options{CompleteLinger: time.Hour})
		cl := queue.NewClient(b)
		mustEnqueue(t, cl, queue.JobSpec{Queue: "rl", Kind: "k"})
		mustEnqueue(t, cl, queue.JobSpec{Queue: "rl", Kind: "k"})
		ctx := context.Background()
		ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"rl"}, Max: 1, LeaseFor: time.Minute})
		if err != nil || len(ls) != 1 {
			t.Fatalf("Lease = %d jobs, %v; want 1", len(ls), err)
		}
		done := completeInBackground(t, b, ls[0])
		if ls2, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"rl"}, Max: 1, LeaseFor: time.Minute}); err != nil || len(ls2) != 1 {
			t.Fatalf("second Lease = %d jobs, %v; want 1", len(ls2), err)
		}
		wantCompleted(t, b, done, ls[0].Job.ID)
	})
}

// TestCompleteLingersAtMostItsTime: with no other call, the completion
// goes out alone once its time is up.
func TestCompleteLingersAtMostItsTime(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		b := s.backend(t, redisqueue.Options{CompleteLinger: 5 * time.Millisecond})
		l := leaseOne(t, b, "alone")
		done := make(chan error, 1)
		go func() {
			done <- b.Complete(queue.BackgroundWrite(context.Background()), l.Job.ID, l.Token, []byte("r"))
		}()
		wantCompleted(t, b, done, l.Job.ID)
	})
}

// TestCompleteWithoutMarkGoesAtOnce: a completion whose caller waits on it
// (no queue.BackgroundWrite mark) does not linger, nor does one with
// lingering turned off.
func TestCompleteWithoutMarkGoesAtOnce(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		for _, c := range []struct {
			name string
			opts redisqueue.Options
			ctx  context.Context
		}{
			{"unmarked", redisqueue.Options{CompleteLinger: time.Hour}, context.Background()},
			{"linger off", redisqueue.Options{CompleteLinger: -1}, queue.BackgroundWrite(context.Background())},
			{"batching off", redisqueue.Options{DisableBatching: true}, queue.BackgroundWrite(context.Background())},
		} {
			b := s.backend(t, c.opts)
			l := leaseOne(t, b, "now")
			done := make(chan error, 1)
			go func() { done <- b.Complete(c.ctx, l.Job.ID, l.Token, []byte("r")) }()
			wantCompleted(t, b, done, l.Job.ID)
		}
	})
}

// TestCloseSendsLingeringCompletes: Close sends what lingers before it
// returns.
func TestCloseSendsLingeringCompletes(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		b := s.backend(t, redisqueue.Options{CompleteLinger: time.Hour})
		l := leaseOne(t, b, "close")
		done := completeInBackground(t, b, l)
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		wantCompleted(t, s.backend(t, redisqueue.Options{}), done, l.Job.ID)
	})
}

// TestManyCompletesDoNotWaitToRide: completions arriving together go out
// together once a few linger; only the last few wait for other traffic.
func TestManyCompletesDoNotWaitToRide(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		b := s.backend(t, redisqueue.Options{Senders: 1, CompleteLinger: time.Hour})
		cl := queue.NewClient(b)
		ctx := context.Background()
		const n = 200
		specs := make([]queue.JobSpec, n)
		for i := range specs {
			specs[i] = queue.JobSpec{Queue: "many", Kind: "k"}
		}
		if _, err := cl.EnqueueBatch(ctx, specs); err != nil {
			t.Fatal(err)
		}
		ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"many"}, Max: n, LeaseFor: time.Minute})
		if err != nil || len(ls) != n {
			t.Fatalf("Lease = %d jobs, %v; want %d", len(ls), err, n)
		}
		var returned atomic.Int64
		errs := make(chan error, n)
		for _, l := range ls {
			go func() {
				errs <- b.Complete(queue.BackgroundWrite(ctx), l.Job.ID, l.Token, []byte("r"))
				returned.Add(1)
			}()
		}
		waitFor(t, "all but the lingering completions to return", func() bool {
			return returned.Load()+int64(redisqueue.LingeringCalls(b)) == n
		})
		if got := redisqueue.LingeringCalls(b); got >= 16 {
			t.Errorf("%d completions lingering; want fewer than 16", got)
		}
		mustEnqueue(t, cl, queue.JobSpec{Queue: "other", Kind: "k"}) // takes them along
		for range n {
			select {
			case err := <-errs:
				if err != nil {
					t.Fatalf("Complete = %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%d of %d completions returned", returned.Load(), n)
			}
		}
		for _, l := range ls {
			if j, err := b.Get(ctx, l.Job.ID); err != nil || j.State != queue.StateCompleted {
				t.Fatalf("Get(%s) = %+v, %v; want completed", l.Job.ID, j, err)
			}
		}
	})
}
