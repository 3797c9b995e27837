package queue_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// A worker that leases at most every 10 ms once it has caught up: jobs
// start up to 10 ms later, and those that arrive together are leased, and
// their completions written, in one call each.
func ExampleWorkerConfig_leaseCooldown() {
	b, done := openExample()
	defer done()
	ctx, cancel := context.WithCancel(context.Background())
	c := queue.NewClient(b)
	for _, p := range []string{"a", "b", "c"} {
		if _, err := c.Enqueue(ctx, queue.JobSpec{Queue: "mail", Kind: "send", Payload: []byte(p)}); err != nil {
			log.Fatal(err)
		}
	}
	w := queue.NewWorker(b, queue.WorkerConfig{
		Queues: []string{"mail"}, Concurrency: 1, LeaseCooldown: 10 * time.Millisecond,
	})
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
