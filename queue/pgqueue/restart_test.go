package pgqueue_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/pgqueue"
)

// Sizes of TestRestart.
const (
	restartJobs    = 300
	restartWorkers = 8
)

// TestRestart restarts the Postgres server itself, on a private server
// of its own (pgtest.StartServer; skipped without the binaries), while a
// worker drains jobs. Twice the server is killed (an immediate stop, as
// in a crash) with every slot of the worker busy: once staying down while
// the handlers finish, so their completions meet a dead server, and once
// as they finish, so completions are cut mid-commit. Meanwhile:
//
//   - enqueues while the server is down fail, before their deadline, and
//     succeed again once it is back, on the worker's store and on another;
//   - every job completes, and the event log shows each completed exactly
//     once. A job may run again only as the at-least-once contract allows:
//     after its lease expired and the store rescued it, or after the crash
//     undid the lease it ran on (see checkRestart). No lease runs twice;
//   - the store's listener comes back: an idle worker on it, whose poll
//     is longer than the test's patience, starts a job enqueued by the
//     other store, so only a notification can have woken it.
func TestRestart(t *testing.T) {
	srv := pgtest.StartServer(t)
	s := openRestart(t, srv.URL()) // the worker's
	p := openRestart(t, srv.URL()) // another process's, to enqueue and watch
	enqueueJobs(t, p, restartJobs)

	runs := newRunLog()
	runs.holdFrom(restartJobs / 3)
	var logs testutil.Buffer
	// The poll is the workers' safety net after a failed lease (nothing
	// else may wake a worker with no job running): the drain keeps the
	// default, so a lease that meets a dead connection costs a second.
	stop := testutil.Start(t, restartWorker(s, runs, time.Second, &logs))

	// A crash with every slot held; the handlers finish while the server
	// is down.
	testutil.Eventually(t, "every slot held before the first restart", runs.allHeld(restartWorkers))
	srv.Stop(pgtest.Immediate)
	kills := []time.Time{time.Now()} // the server is down: every lease it gave is older
	for _, st := range []*pgqueue.Store{s, p} {
		enqueueDown(t, st)
	}
	runs.release(2 * restartJobs / 3)
	srv.Start()
	for _, st := range []*pgqueue.Store{s, p} {
		enqueueBack(t, st)
	}

	// A crash as the held handlers finish, cutting their completions.
	testutil.Eventually(t, "every slot held before the second restart", runs.allHeld(restartWorkers))
	runs.release(0)
	srv.Stop(pgtest.Immediate)
	kills = append(kills, time.Now())
	srv.Start()
	testutil.Eventually(t, "every job completed after the restarts", allCompleted(p, restartJobs+2))
	stop()

	// The listener: a worker that polls too seldom to matter, once idle,
	// is woken by the other store's job.
	watch := &leaseWatch{Store: s}
	stop = testutil.Start(t, restartWorker(watch, runs, 2*testutil.Patience, &logs))
	testutil.Eventually(t, "the listening worker idle", watch.idle)
	probe := enqueueBack(t, p)
	testutil.Eventually(t, "a job enqueued by another store started, woken by the listener", func() bool {
		return runs.count(probe) > 0
	})
	stop()

	checkRestart(t, p, runs, kills)
	out := logs.String()
	t.Logf("outcomes written on a retry: %d; not written, the lease gone by the retry: %d; failed leases: %d",
		strings.Count(out, "outcome recorded after a store fault"), strings.Count(out, "not recorded on retry: the lease is gone"),
		strings.Count(out, "lease failed"))
}

// restartWorker is TestRestart's worker on b, running runs.work, polling
// every poll and logging to logs.
func restartWorker(b backend.Backend, runs *runLog, poll time.Duration, logs io.Writer) *queue.Worker {
	w := queue.NewWorker(b, queue.WorkerConfig{
		Queues: []string{"q"}, Concurrency: restartWorkers, LeaseFor: 4 * time.Second,
		RescueEvery: 500 * time.Millisecond, PollInterval: poll,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	w.Handle("k", queue.HandlerFunc(runs.work))
	return w
}

// openRestart opens a store with the event log on the database at url,
// closed when t ends.
func openRestart(t *testing.T, url string) *pgqueue.Store {
	t.Helper()
	s, err := pgqueue.Open(context.Background(), url, pgqueue.Options{MaxConns: testConns, Events: true})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// enqueueJobs enqueues n jobs of kind "k" on queue "q".
func enqueueJobs(t *testing.T, s *pgqueue.Store, n int) {
	t.Helper()
	specs := make([]queue.JobSpec, n)
	for i := range specs {
		specs[i] = queue.JobSpec{Queue: "q", Kind: "k"}
	}
	if _, err := s.Enqueue(context.Background(), specs); err != nil {
		t.Fatal(err)
	}
}

// downDeadline bounds an enqueue while the server is down: it must fail
// before it, since the server refuses connections.
const downDeadline = 30 * time.Second

// enqueueDown checks that enqueues on s fail, and do not wait out their
// deadline, while the server is down: one more than the pool holds, so
// the last meets a refused connection, not a dead one of the pool.
func enqueueDown(t *testing.T, s *pgqueue.Store) {
	t.Helper()
	for range testConns + 1 {
		ctx, cancel := context.WithTimeout(context.Background(), downDeadline)
		_, err := s.Enqueue(ctx, []queue.JobSpec{{Queue: "q", Kind: "k"}})
		cancel()
		switch {
		case err == nil:
			t.Fatal("an enqueue succeeded while the server was down")
		case errors.Is(err, context.DeadlineExceeded):
			t.Fatalf("an enqueue while the server was down waited out its %s deadline instead of failing: %v", downDeadline, err)
		}
		t.Logf("enqueue while the server is down: %v", err)
	}
}

// enqueueBack enqueues one job on s, trying again until the store has
// reconnected, and returns its id.
func enqueueBack(t *testing.T, s *pgqueue.Store) string {
	t.Helper()
	var id string
	testutil.Eventually(t, "an enqueue to succeed after the restart", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), downDeadline)
		defer cancel()
		out, err := s.Enqueue(ctx, []queue.JobSpec{{Queue: "q", Kind: "k"}})
		if err == nil {
			id = out[0].Job.ID
		}
		return err
	})
	return id
}

// allCompleted is the condition that s holds want jobs, all completed.
func allCompleted(s *pgqueue.Store, want int) func() error {
	return func() error {
		st, err := s.Stats(context.Background())
		if err != nil {
			return err
		}
		var done, all int64
		for _, q := range st {
			for state, n := range q.Counts {
				all += n
				if state == queue.StateCompleted {
					done += n
				}
			}
		}
		if done < int64(want) || done != all {
			return fmt.Errorf("%d of %d jobs completed", done, all)
		}
		return nil
	}
}
