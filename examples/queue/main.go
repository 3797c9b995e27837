// Command queue runs a producer and a worker on an embedded SQLite queue in
// a temporary file: it enqueues invoices to render, a duplicate, one that
// fails once and is retried, and one that can never succeed, then prints
// what happened to each and the queue's counts.
//
//	go run ./examples/queue
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

func main() {
	dir, err := os.MkdirTemp("", "sluice-queue-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := run(context.Background(), os.Stdout, filepath.Join(dir, "queue.db")); err != nil {
		log.Fatal(err)
	}
}

// invoices are the payloads the producer enqueues; "ACME-3" fails its first
// attempt (a flaky upstream) and "BROKEN" can never be rendered.
var invoices = []string{"ACME-1", "ACME-2", "ACME-3", "GLOBEX-1", "BROKEN"}

func run(ctx context.Context, out io.Writer, path string) error {
	b, err := sqlitequeue.Open(path, sqlitequeue.Options{})
	if err != nil {
		return err
	}
	defer b.Close()
	ids, err := produce(ctx, out, queue.NewClient(b))
	if err != nil {
		return err
	}
	if err := work(ctx, b, len(ids)); err != nil {
		return err
	}
	return report(ctx, out, queue.NewClient(b), ids)
}

// produce enqueues the invoices, then one of them again under the same
// unique key.
func produce(ctx context.Context, out io.Writer, c *queue.Client) ([]string, error) {
	var ids []string
	for i, inv := range invoices {
		j, err := c.Enqueue(ctx, queue.JobSpec{
			Queue: "billing", Kind: "render-invoice", Payload: []byte(inv),
			Tenant: strings.SplitN(inv, "-", 2)[0], Priority: i % 2, MaxAttempts: 3,
			UniqueKey: "invoice:" + inv,
		})
		if err != nil {
			return nil, err
		}
		ids = append(ids, j.ID)
	}
	dup, err := c.Enqueue(ctx, queue.JobSpec{Queue: "billing", Kind: "render-invoice", Payload: []byte("ACME-1"), UniqueKey: "invoice:ACME-1"})
	fmt.Fprintf(out, "enqueued %d invoices; enqueuing ACME-1 again: %v (job %s)\n", len(ids), err, dup.ID)
	if !errors.Is(err, queue.ErrDuplicate) {
		return nil, fmt.Errorf("expected a duplicate, got %v", err)
	}
	return ids, nil
}

// work runs a worker until every job has finished, then stops it
// gracefully.
func work(ctx context.Context, b backend.Backend, jobs int) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var finished atomic.Int32
	allDone := make(chan struct{})
	w := queue.NewWorker(b, queue.WorkerConfig{
		Queues: []string{"billing"}, Concurrency: 4,
		Backoff: func(int, error) time.Duration { return 10 * time.Millisecond },
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	w.Handle("render-invoice", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		res, err := render(j)
		if err == nil || queue.IsPermanent(err) {
			if finished.Add(1) == int32(jobs) {
				close(allDone)
			}
		}
		return res, err
	}))
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(ctx) }()
	select {
	case <-allDone:
	case <-time.After(time.Minute):
		return errors.New("jobs did not finish within a minute")
	}
	stop()
	return <-stopped
}

func render(j *queue.Job) ([]byte, error) {
	inv := string(j.Payload)
	switch {
	case inv == "BROKEN":
		return nil, queue.Permanent(errors.New("invoice has no lines"))
	case inv == "ACME-3" && j.Attempt == 1:
		return nil, errors.New("pdf service timed out")
	}
	return []byte(fmt.Sprintf("%s.pdf", strings.ToLower(inv))), nil
}

// report prints each job's outcome and the queue's counts.
func report(ctx context.Context, out io.Writer, c *queue.Client, ids []string) error {
	for _, id := range ids {
		j, err := c.Get(ctx, id)
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%-8s %-9s after %d attempt(s)", j.Payload, j.State, j.Attempt)
		if j.Result != nil {
			line += " -> " + string(j.Result)
		}
		if len(j.Errors) > 0 {
			line += fmt.Sprintf(" (errors: %q)", j.Errors[0].Error)
		}
		fmt.Fprintln(out, line)
	}
	st, err := c.Stats(ctx)
	if err != nil {
		return err
	}
	for _, q := range st {
		var parts []string
		for s, n := range q.Counts {
			parts = append(parts, fmt.Sprintf("%s=%d", s, n))
		}
		sort.Strings(parts)
		fmt.Fprintf(out, "queue %s: %s\n", q.Queue, strings.Join(parts, " "))
	}
	return nil
}
