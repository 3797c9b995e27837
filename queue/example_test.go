package queue_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// openExample opens a queue in a fresh temporary file.
func openExample() (*sqlitequeue.Backend, func()) {
	dir, err := os.MkdirTemp("", "queue-example")
	if err != nil {
		log.Fatal(err)
	}
	b, err := sqlitequeue.Open(filepath.Join(dir, "queue.db"), sqlitequeue.Options{})
	if err != nil {
		log.Fatal(err)
	}
	return b, func() { b.Close(); os.RemoveAll(dir) }
}

func ExampleClient_Enqueue() {
	b, done := openExample()
	defer done()
	c := queue.NewClient(b)
	ctx := context.Background()

	j, err := c.Enqueue(ctx, queue.JobSpec{Queue: "mail", Kind: "welcome", Payload: []byte(`{"user":42}`)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(j.State, j.Attempt, j.MaxAttempts)

	// A delayed job waits, scheduled, until its time.
	later, _ := c.Enqueue(ctx, queue.JobSpec{Queue: "mail", Kind: "reminder", RunAt: time.Now().Add(time.Hour)})
	fmt.Println(later.State)

	// A unique key returns the job that holds it.
	first, _ := c.Enqueue(ctx, queue.JobSpec{Queue: "mail", Kind: "digest", UniqueKey: "digest:42", UniqueFor: time.Hour})
	again, err := c.Enqueue(ctx, queue.JobSpec{Queue: "mail", Kind: "digest", UniqueKey: "digest:42", UniqueFor: time.Hour})
	fmt.Println(errors.Is(err, queue.ErrDuplicate), again.ID == first.ID)

	// Bad input is refused, naming the field.
	_, err = c.Enqueue(ctx, queue.JobSpec{Queue: "mail"})
	fmt.Println(err)
	// Output:
	// pending 0 25
	// scheduled
	// true true
	// queue: JobSpec.Kind must not be empty
}

func ExampleClient_List() {
	b, done := openExample()
	defer done()
	c := queue.NewClient(b)
	ctx := context.Background()

	for _, s := range []struct{ tenant, kind string }{{"acme", "invoice"}, {"globex", "invoice"}, {"acme", "receipt"}, {"acme", "invoice"}} {
		if _, err := c.Enqueue(ctx, queue.JobSpec{Queue: "billing", Kind: s.kind, Tenant: s.tenant}); err != nil {
			log.Fatal(err)
		}
	}
	// acme's invoices, newest first, two a page: stop when Next is empty,
	// not when a page is short.
	f := queue.ListFilter{Tenant: "acme", Kind: "invoice", Order: queue.NewestFirst, Limit: 2}
	for {
		page, err := c.List(ctx, f)
		if err != nil {
			log.Fatal(err)
		}
		for _, j := range page.Jobs {
			fmt.Println(j.ID, j.Tenant, j.Kind)
		}
		if page.Next == "" {
			break
		}
		f.Cursor = page.Next
	}
	_, err := c.List(ctx, queue.ListFilter{Order: "sideways"})
	fmt.Println(err)
	// Output:
	// 4 acme invoice
	// 1 acme invoice
	// queue: ListFilter.Order must be "oldest" or "newest", got "sideways"
}

func ExampleWorker() {
	b, done := openExample()
	defer done()
	c := queue.NewClient(b)
	ctx, stop := context.WithCancel(context.Background())

	results := make(chan string)
	w := queue.NewWorker(b, queue.WorkerConfig{Queues: []string{"images"}, Concurrency: 4})
	w.Handle("resize", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		out := "resized " + string(j.Payload)
		results <- out
		return []byte(out), nil
	}))
	stopped := make(chan error)
	go func() { stopped <- w.Run(ctx) }()

	j, err := c.Enqueue(ctx, queue.JobSpec{Queue: "images", Kind: "resize", Payload: []byte("cat.png")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-results)
	stop() // graceful: waits for running jobs, gives back the rest
	fmt.Println("Run:", <-stopped)

	j, _ = c.Get(context.Background(), j.ID)
	fmt.Println(j.State, string(j.Result))
	// Output:
	// resized cat.png
	// Run: <nil>
	// completed resized cat.png
}

func ExamplePermanent() {
	h := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		if len(j.Payload) == 0 {
			// Retrying cannot fix a bad payload: fail for good.
			return nil, queue.Permanent(errors.New("empty payload"))
		}
		return nil, nil
	})
	_, err := h.Work(context.Background(), &queue.Job{})
	fmt.Println(err, queue.IsPermanent(err))
	// Output: empty payload true
}

func ExampleSnooze() {
	h := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		// The upstream is not ready: look again in a minute, without
		// spending an attempt.
		return nil, queue.Snooze(time.Minute)
	})
	_, err := h.Work(context.Background(), &queue.Job{})
	var s *queue.SnoozeError
	fmt.Println(errors.As(err, &s), s.Delay)
	// Output: true 1m0s
}

func ExampleExtendLease() {
	b, done := openExample()
	defer done()
	c := queue.NewClient(b)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	leased := make(chan time.Duration)
	w := queue.NewWorker(b, queue.WorkerConfig{Queues: []string{"reports"}, LeaseFor: 30 * time.Second})
	w.Handle("build", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		// A long step ahead: hold the job for ten minutes from now.
		if err := queue.ExtendLease(ctx, 10*time.Minute); err != nil {
			return nil, err // the lease is lost: another worker may own the job now
		}
		cur, _ := c.Get(ctx, j.ID)
		leased <- time.Until(cur.LeaseUntil).Round(time.Minute)
		return nil, nil
	}))
	stopped := make(chan error)
	go func() { stopped <- w.Run(ctx) }()
	if _, err := c.Enqueue(ctx, queue.JobSpec{Queue: "reports", Kind: "build"}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("lease left:", <-leased)
	stop()
	<-stopped
	// Output: lease left: 10m0s
}
