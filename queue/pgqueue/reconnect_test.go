package pgqueue_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/pgqueue"
)

// TestReconnect stands in for a Postgres restart while a worker drains
// jobs: every connection of the store (the pool's and the listener's) is
// terminated by the server, again and again. The store's calls fail while
// their connections die, the worker retries them, the pool connects again
// and the listener comes back, and every job completes exactly once: each
// ends completed, no attempt of a job is handed out twice, and a job
// whose lease was lost with a connection ran again only after the store
// rescued it.
func TestReconnect(t *testing.T) {
	t.Parallel()
	const jobs, killRounds, killProgress = 400, 10, 2
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url)
	ctx := context.Background()
	app := "reconnect-" + schema
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	s, err := pgqueue.Open(ctx, url+sep+"application_name="+app, pgqueue.Options{Schema: schema, MaxConns: testConns})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Another store on the schema, whose connections survive, reads
	// the outcome and terminates the others.
	admin, err := pgqueue.Open(ctx, url, pgqueue.Options{Schema: schema, MaxConns: testConns})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	specs := make([]queue.JobSpec, jobs)
	for i := range specs {
		specs[i] = queue.JobSpec{Queue: "q", Kind: "k"}
	}
	if _, err := s.Enqueue(ctx, specs); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	// Job id -> each run's lease, told apart by attempt and stalls: a
	// rescue gives back the attempt it took, so a rerun after one has the
	// same attempt and one more stall.
	type lease struct{ attempt, stalls int }
	runs := map[string][]lease{}
	w := queue.NewWorker(s, queue.WorkerConfig{
		Queues: []string{"q"}, Concurrency: 4, LeaseFor: 3 * time.Second, RescueEvery: 300 * time.Millisecond,
		PollInterval: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	w.Handle("k", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		mu.Lock()
		runs[j.ID] = append(runs[j.ID], lease{j.Attempt, j.Stalls})
		mu.Unlock()
		time.Sleep(5 * time.Millisecond) // a job takes a moment, so kills land mid-drain
		return nil, nil
	}))
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(wctx) }()
	defer func() { stop(); <-done }()

	// Kill until half the jobs are done, so the kills span the drain,
	// and at least killRounds times. Between kills the worker must
	// complete killProgress more jobs: the kills keep pace with the
	// worker however slow the machine is, and a worker that stops
	// making progress fails the wait.
	killed, rounds := 0, 0
	for ; rounds < killRounds || completed(t, admin) < jobs/2; rounds++ {
		before := completed(t, admin)
		var n int
		err := admin.Pool().QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		killed += n
		testutil.Eventually(t, "the worker to make progress after a kill", func() bool {
			return completed(t, admin) >= min(before+killProgress, jobs)
		})
	}
	if killed < rounds {
		t.Fatalf("terminated %d connections in %d rounds; want at least one a round", killed, rounds)
	}
	testutil.Eventually(t, "every job completed after the last kill", func() bool { return completed(t, admin) >= jobs })
	stop()
	<-done

	mu.Lock()
	defer mu.Unlock()
	if len(runs) != jobs {
		t.Fatalf("handlers ran for %d jobs, want %d", len(runs), jobs)
	}
	again := 0
	for id, attempts := range runs {
		j, err := admin.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[lease]bool{}
		for _, a := range attempts {
			if seen[a] {
				t.Errorf("job %s: one lease ran twice (runs %+v)", id, attempts)
			}
			seen[a] = true
		}
		if len(attempts) > 1 {
			again++
			if j.Stalls == 0 {
				t.Errorf("job %s ran %d times (attempts %v) but was never rescued", id, len(attempts), attempts)
			}
		}
		if j.State != queue.StateCompleted {
			t.Errorf("job %s ends %s, want completed", id, j.State)
		}
	}
	t.Logf("%d connections terminated in %d rounds; %d of %d jobs ran again after a lost lease", killed, rounds, again, jobs)
}

// completed counts the completed jobs of s.
func completed(t *testing.T, s *pgqueue.Store) int64 {
	t.Helper()
	st, err := s.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, q := range st {
		n += q.Counts[queue.StateCompleted]
	}
	return n
}
