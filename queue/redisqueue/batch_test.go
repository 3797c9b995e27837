package redisqueue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// TestMergedCalls sends many calls at once through one pipeline slot, so
// they wait in line and go out merged: each caller must still get exactly
// its own outcome. Half of the completes carry a wrong token; concurrent
// enqueues of one unique key must yield one job and duplicates of it.
func TestMergedCalls(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		b := s.backend(t, redisqueue.Options{Senders: 1})
		cl := queue.NewClient(b)
		ctx := context.Background()
		const n = 200
		var wg sync.WaitGroup
		ids := make([]string, n)
		for i := range n {
			wg.Go(func() {
				j, err := cl.Enqueue(ctx, queue.JobSpec{Queue: "m", Kind: "k", Payload: []byte(fmt.Sprint(i))})
				if err != nil {
					t.Error(err)
					return
				}
				ids[i] = j.ID
			})
		}
		wg.Wait()
		ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"m"}, Max: n, LeaseFor: time.Minute})
		if err != nil || len(ls) != n {
			t.Fatalf("Lease = %d jobs, %v; want %d", len(ls), err, n)
		}
		errs := make([]error, n)
		for i, l := range ls {
			wg.Go(func() {
				tok := l.Token
				if i%2 == 1 {
					tok += "x"
				}
				errs[i] = b.Complete(ctx, l.Job.ID, tok, []byte(string(l.Job.Payload)))
			})
		}
		wg.Wait()
		for i, l := range ls {
			j, err := b.Get(ctx, l.Job.ID)
			if err != nil {
				t.Fatal(err)
			}
			if i%2 == 1 {
				if !errors.Is(errs[i], queue.ErrLeaseLost) || j.State != queue.StateActive {
					t.Errorf("wrong token: Complete = %v, state %s; want ErrLeaseLost, active", errs[i], j.State)
				}
				continue
			}
			if errs[i] != nil || j.State != queue.StateCompleted || string(j.Result) != string(l.Job.Payload) {
				t.Errorf("Complete = %v, state %s, result %q; want completed with %q", errs[i], j.State, j.Result, l.Job.Payload)
			}
		}

		if s.mini != nil {
			// Redis forgets its scripts (a restart, SCRIPT FLUSH): the
			// EVALSHAs of a pipeline fail with NOSCRIPT and are sent again.
			// Only on miniredis: flushing a shared Redis slows its other users.
			if err := s.client(t).ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		res := make([]*queue.Job, n)
		dups := make([]error, n)
		for i := range n {
			wg.Go(func() {
				res[i], dups[i] = cl.Enqueue(ctx, queue.JobSpec{Queue: "u", Kind: "k", UniqueKey: "one"})
			})
		}
		wg.Wait()
		fresh := 0
		for i := range n {
			switch {
			case dups[i] == nil:
				fresh++
			case !errors.Is(dups[i], queue.ErrDuplicate):
				t.Fatalf("Enqueue: %v", dups[i])
			}
			if res[i] == nil || res[i].ID != res[0].ID {
				t.Fatalf("enqueue %d returned job %v, want %s", i, res[i], res[0].ID)
			}
		}
		if fresh != 1 {
			t.Fatalf("%d enqueues stored a job, want 1", fresh)
		}
	})
}
