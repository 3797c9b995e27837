package redisqueue_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// TestConcurrentWorkers runs 4 workers, each on its own client (as four
// processes would), with concurrency 16 on 10,000 jobs: every job must
// complete exactly once, none may be lost, none left active. On miniredis,
// whose Lua interpreter is far slower than Redis's, it runs 2,000 jobs to
// stay quick under the race detector.
func TestConcurrentWorkers(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		const (
			workers     = 4
			concurrency = 16
		)
		jobs := 10_000
		if s.mini != nil {
			jobs = 2_000
		}
		ctx := context.Background()
		producer := queue.NewClient(s.backend(t, redisqueue.Options{}))
		var specs []queue.JobSpec
		for i := 0; i < jobs; i++ {
			specs = append(specs, queue.JobSpec{Queue: "load", Kind: "k", Payload: []byte(fmt.Sprint(i))})
		}
		for i := 0; i < jobs; i += 1000 {
			if _, err := producer.EnqueueBatch(ctx, specs[i:i+1000]); err != nil {
				t.Fatal(err)
			}
		}

		var mu sync.Mutex
		runs := map[string]int{}
		runCtx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wk := queue.NewWorker(s.backend(t, redisqueue.Options{}), queue.WorkerConfig{
				Queues: []string{"load"}, Concurrency: concurrency, PollInterval: 5 * time.Millisecond,
				Logger: quiet, ID: fmt.Sprint("w", w),
			})
			wk.Handle("k", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
				mu.Lock()
				runs[j.ID]++
				mu.Unlock()
				return nil, nil
			}))
			wg.Go(func() {
				if err := wk.Run(runCtx); err != nil {
					t.Errorf("Run: %v", err)
				}
			})
		}
		waitCompleted(t, producer, "load", int64(jobs))
		stop()
		wg.Wait()

		st, err := producer.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(st) != 1 || st[0].Counts[queue.StateCompleted] != int64(jobs) || len(st[0].Counts) != 1 {
			t.Fatalf("Stats = %+v, want only %d completed", st, jobs)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(runs) != jobs {
			t.Fatalf("%d distinct jobs ran, want %d", len(runs), jobs)
		}
		for id, n := range runs {
			if n != 1 {
				t.Errorf("job %s ran %d times", id, n)
			}
		}
	})
}

// waitCompleted polls Stats until n jobs of q completed, for at most two
// minutes of real time (the test fails rather than hangs).
func waitCompleted(t *testing.T, c *queue.Client, q string, n int64) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, err := c.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var done int64
		for _, s := range st {
			if s.Queue == q {
				done = s.Counts[queue.StateCompleted]
			}
		}
		if done >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs completed after 2 minutes: %+v", done, n, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
