package queue_test

import (
	"context"
	"fmt"
	"log"

	"github.com/sluicehq/sluice/queue"
)

// A worker that runs one job at a time and holds two more, leased and
// renewed, ready for the moment its slot frees; they start in the order
// they were leased.
func ExampleWorkerConfig_prefetch() {
	b, done := openExample()
	defer done()
	ctx, cancel := context.WithCancel(context.Background())
	c := queue.NewClient(b)
	for _, p := range []string{"a", "b", "c"} {
		if _, err := c.Enqueue(ctx, queue.JobSpec{Queue: "mail", Kind: "send", Payload: []byte(p)}); err != nil {
			log.Fatal(err)
		}
	}
	w := queue.NewWorker(b, queue.WorkerConfig{Queues: []string{"mail"}, Concurrency: 1, Prefetch: 2})
	ran := 0
	w.Handle("send", queue.HandlerFunc(func(_ context.Context, j *queue.Job) ([]byte, error) {
		fmt.Println("sent", string(j.Payload))
		if ran++; ran == 3 {
			cancel()
		}
		return nil, nil
	}))
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// sent a
	// sent b
	// sent c
}
