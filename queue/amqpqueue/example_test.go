package amqpqueue_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/amqpqueue"
)

// A producer and a worker on the lane. It needs a broker, so it is not run
// as a test.
func Example() {
	lane, err := amqpqueue.New(os.Getenv("SLUICE_AMQP_URL"), amqpqueue.Options{
		Queues:   []string{"scrape"},
		Prefetch: 200,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer lane.Close()

	// Enqueue returns once the broker has confirmed the job.
	client := queue.NewClient(lane)
	job, err := client.Enqueue(context.Background(), queue.JobSpec{Queue: "scrape", Kind: "page", Payload: []byte("https://example.com")})
	if err != nil {
		log.Fatal(err)
	}

	w := queue.NewWorker(lane, queue.WorkerConfig{Queues: []string{"scrape"}, Concurrency: 100})
	w.Handle("page", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		return []byte("fetched " + string(j.Payload)), nil
	}))
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() { _ = w.Run(ctx) }()

	// What the lane cannot do is refused, not ignored.
	_, err = client.Enqueue(ctx, queue.JobSpec{Queue: "scrape", Kind: "page", UniqueKey: "https://example.com"})
	fmt.Println(err)
	fmt.Println(job.ID != "")
}
