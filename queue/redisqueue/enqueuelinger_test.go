package redisqueue_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// TestEnqueueLingerMergesEnqueues: enqueues into one queue that wait in
// line together run as one script, each still stored whole, when the next
// call of the Backend goes out.
func TestEnqueueLingerMergesEnqueues(t *testing.T) {
	for _, lean := range []bool{true, false} {
		t.Run(map[bool]string{true: "lean", false: "full"}[lean], func(t *testing.T) {
			forEachServer(t, func(t *testing.T, s server) {
				c := s.client(t)
				b := s.backendOn(t, c, redisqueue.Options{EnqueueLinger: time.Hour})
				if !lean {
					redisqueue.DisableLean(b)
				}
				cl := queue.NewClient(b)
				// The scripts loaded in the server: no retry of one counts twice below.
				warm := s.backend(t, redisqueue.Options{})
				if !lean {
					redisqueue.DisableLean(warm)
				}
				leaseOne(t, warm, "warm")
				var pc pipeCounter
				c.AddHook(&pc)
				const n = 3
				ids := make([]string, n)
				errs := make([]error, n)
				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() {
						j, err := cl.Enqueue(context.Background(), queue.JobSpec{Queue: "merge", Kind: "k", Payload: []byte{byte('a' + i)}})
						if err == nil {
							ids[i] = j.ID
						}
						errs[i] = err
					})
				}
				waitFor(t, "the enqueues to wait in line", func() bool { return redisqueue.LingeringCalls(b) == n })
				if got := pc.pipes.Load(); got != 0 {
					t.Fatalf("pipelines sent while the enqueues wait: %d; want 0", got)
				}
				// A lease goes out at once and takes the line along.
				ls, err := b.Lease(context.Background(), backend.LeaseRequest{Queues: []string{"merge"}, Max: n + 1, LeaseFor: time.Minute})
				if err != nil || len(ls) != n {
					t.Fatalf("Lease = %d jobs, %v; want %d", len(ls), err, n)
				}
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						t.Fatalf("Enqueue %d = %v", i, err)
					}
				}
				if got := pc.largest.Load(); got != 2 {
					t.Errorf("largest pipeline: %d scripts; want 2 (the three enqueues as one, and the lease)", got)
				}
				for i, id := range ids {
					j, err := b.Get(context.Background(), id)
					if err != nil || j.State != queue.StateActive || string(j.Payload) != string(rune('a'+i)) {
						t.Fatalf("job %d: %+v, %v; want active with payload %c", i, j, err, 'a'+i)
					}
				}
			})
		})
	}
}

// TestEnqueueLingersAtMostItsTime: with no other call, an enqueue goes
// out alone once its time is up.
func TestEnqueueLingersAtMostItsTime(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		b := s.backend(t, redisqueue.Options{EnqueueLinger: 5 * time.Millisecond})
		j := mustEnqueue(t, queue.NewClient(b), queue.JobSpec{Queue: "alone", Kind: "k"})
		if got, err := b.Get(context.Background(), j.ID); err != nil || got.State != queue.StatePending {
			t.Fatalf("Get = %+v, %v; want pending", got, err)
		}
	})
}

// TestEnqueueWithoutLingerGoesAtOnce: by default, and with batching off,
// an enqueue never waits in line, even beside a lingering completion.
func TestEnqueueWithoutLingerGoesAtOnce(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		for _, opts := range []redisqueue.Options{
			{CompleteLinger: time.Hour},
			{EnqueueLinger: time.Hour, DisableBatching: true},
		} {
			b := s.backend(t, opts)
			done := make(chan error, 1)
			go func() {
				_, err := queue.NewClient(b).Enqueue(context.Background(), queue.JobSpec{Queue: "now", Kind: "k"})
				done <- err
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("%+v: Enqueue = %v", opts, err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%+v: Enqueue waited in line", opts)
			}
		}
	})
}
