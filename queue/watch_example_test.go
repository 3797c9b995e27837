package queue_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// openWatched opens an example backend with its event log on, which wakes
// waiters and feeds subscriptions.
func openWatched() (*sqlitequeue.Backend, func()) {
	dir, err := os.MkdirTemp("", "queue-watch-example")
	if err != nil {
		log.Fatal(err)
	}
	b, err := sqlitequeue.Open(filepath.Join(dir, "queue.db"), sqlitequeue.Options{Events: true})
	if err != nil {
		log.Fatal(err)
	}
	return b, func() { b.Close(); os.RemoveAll(dir) }
}

// A handler reports how far it got; the job keeps its latest report, and
// Wait returns the job once it is final.
func ExampleReportProgress() {
	b, done := openWatched()
	defer done()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	c := queue.NewClient(b)
	job, _ := c.Enqueue(ctx, queue.JobSpec{Queue: "crawl", Kind: "site"})

	w := queue.NewWorker(b, queue.WorkerConfig{Queues: []string{"crawl"}, Logger: slog.New(slog.DiscardHandler)})
	w.Handle("site", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		for page := 1; page <= 50; page++ {
			// Coalesced: at most one write per queue.ProgressEvery.
			_ = j.ReportProgress(ctx, queue.Percent(float64(page*2)).WithData(map[string]int{"pages": page}))
		}
		return []byte(`"done"`), nil
	}))
	go func() { _ = w.Run(ctx) }()

	final, err := c.Wait(ctx, job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(final.State, *final.Progress.Percent, string(final.Progress.Data))
	// Output: completed 100 {"pages":50}
}

// Subscribe streams what happens to the jobs a filter selects; resuming
// with After set to the last id seen replays what was missed.
func ExampleClient_Subscribe() {
	b, done := openWatched()
	defer done()
	ctx := context.Background()
	c := queue.NewClient(b)
	sub, err := c.Subscribe(ctx, queue.EventFilter{Queue: "mail"})
	if err != nil {
		log.Fatal(err)
	}
	job, _ := c.Enqueue(ctx, queue.JobSpec{Queue: "mail", Kind: "send"})
	first := <-sub.Events()
	sub.Close()
	fmt.Println(first.Type, first.JobID == job.ID)

	// Missed while away, then read on resuming.
	_, _ = c.Cancel(ctx, job.ID)
	sub, _ = c.Subscribe(ctx, queue.EventFilter{Queue: "mail", After: first.ID})
	defer sub.Close()
	fmt.Println((<-sub.Events()).Type)
	// Output:
	// job.enqueued true
	// job.cancelled
}
