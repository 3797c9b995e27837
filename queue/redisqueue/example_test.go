package redisqueue_test

import (
	"context"
	"fmt"
	"log"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// A producer enqueues a job and a worker runs it, both on one Redis (here
// an in-process miniredis; in production a redis.NewClient to your server,
// shared by every process).
func Example() {
	srv, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()

	backend, err := redisqueue.New(rdb, redisqueue.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer backend.Close()

	// Producer.
	client := queue.NewClient(backend)
	job, err := client.Enqueue(context.Background(), queue.JobSpec{
		Queue: "mail", Kind: "welcome", Payload: []byte("ada@example.com"),
	})
	if err != nil {
		log.Fatal(err)
	}

	// Worker: runs until its context ends, then shuts down gracefully.
	ctx, stop := context.WithCancel(context.Background())
	w := queue.NewWorker(backend, queue.WorkerConfig{Queues: []string{"mail"}})
	w.Handle("welcome", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		fmt.Printf("sending a welcome mail to %s\n", j.Payload)
		defer stop() // one job is enough for this example
		return []byte("sent"), nil
	}))
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}

	done, err := client.Get(context.Background(), job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(done.State, string(done.Result))
	// Output:
	// sending a welcome mail to ada@example.com
	// completed sent
}
