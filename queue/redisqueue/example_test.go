package redisqueue_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
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

	store, err := redisqueue.New(rdb, redisqueue.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	// Producer.
	client := queue.NewClient(store)
	job, err := client.Enqueue(context.Background(), queue.JobSpec{
		Queue: "mail", Kind: "welcome", Payload: []byte("ada@example.com"),
	})
	if err != nil {
		log.Fatal(err)
	}

	// Worker: runs until its context ends, then shuts down gracefully.
	ctx, stop := context.WithCancel(context.Background())
	w := queue.NewWorker(store, queue.WorkerConfig{Queues: []string{"mail"}})
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

// With Options.Outbox the backend records an event in the same script as
// every job's final transition; queue/webhook's Dispatcher claims and
// delivers them. Here the events are claimed by hand.
func Example_outbox() {
	srv, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()

	store, err := redisqueue.New(rdb, redisqueue.Options{Outbox: true})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	ctx := context.Background()
	client := queue.NewClient(store)
	if _, err := client.Enqueue(ctx, queue.JobSpec{Queue: "mail", Kind: "welcome"}); err != nil {
		log.Fatal(err)
	}
	leases, err := store.Lease(ctx, backend.LeaseRequest{Queues: []string{"mail"}, WorkerID: "w1", Max: 1, LeaseFor: time.Minute})
	if err != nil || len(leases) != 1 {
		log.Fatal(err)
	}
	if err := store.Complete(ctx, leases[0].Job.ID, leases[0].Token, nil); err != nil {
		log.Fatal(err)
	}

	claimed, err := store.ClaimEvents(ctx, 10, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range claimed {
		fmt.Println(c.Event.Type, c.Event.Queue, c.Event.Kind, c.Event.JobID == leases[0].Job.ID)
		if err := store.AckEvent(ctx, c.Event.ID, c.Token); err != nil {
			log.Fatal(err)
		}
	}
	// Output: job.completed mail welcome true
}

// A tenant limited to one job at a time: its second job waits, visibly,
// until the first one's slot frees, and is then released in the same step.
func Example_tenants() {
	srv, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	store, err := redisqueue.New(rdb, redisqueue.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	client := queue.NewClient(store)

	if err := client.SetTenant(ctx, "acme", queue.TenantConfig{Limit: 1}); err != nil {
		log.Fatal(err)
	}
	first, _ := client.Enqueue(ctx, queue.JobSpec{Queue: "crawl", Kind: "page", Tenant: "acme"})
	second, _ := client.Enqueue(ctx, queue.JobSpec{Queue: "crawl", Kind: "page", Tenant: "acme"})
	fmt.Println(first.State, second.State)

	leases, err := store.Lease(ctx, backend.LeaseRequest{Queues: []string{"crawl"}, WorkerID: "w1", Max: 10, LeaseFor: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("leased:", len(leases))

	if err := store.Complete(ctx, leases[0].Job.ID, leases[0].Token, nil); err != nil {
		log.Fatal(err)
	}
	j, _ := client.Get(ctx, second.ID)
	info, _ := client.Tenant(ctx, "acme")
	fmt.Println(j.State, info.Pending, info.Waiting, info.Active)
	// Output:
	// pending waiting
	// leased: 1
	// pending 1 0 0
}

// A producer and worker that trade a few milliseconds of start latency
// for fewer script runs per job at an ordinary rate: enqueues that meet
// within 2 ms run as one script, and the worker leases at most every
// 10 ms once it has caught up.
func ExampleOptions_enqueueLinger() {
	srv, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()

	store, err := redisqueue.New(rdb, redisqueue.Options{EnqueueLinger: 2 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	client := queue.NewClient(store)
	for _, to := range []string{"ada@example.com", "alan@example.com"} {
		if _, err := client.Enqueue(context.Background(), queue.JobSpec{Queue: "mail", Kind: "welcome", Payload: []byte(to)}); err != nil {
			log.Fatal(err)
		}
	}

	ctx, stop := context.WithCancel(context.Background())
	w := queue.NewWorker(store, queue.WorkerConfig{
		Queues: []string{"mail"}, Concurrency: 1, LeaseCooldown: 10 * time.Millisecond,
	})
	sent := 0
	w.Handle("welcome", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		fmt.Printf("welcome mail to %s\n", j.Payload)
		if sent++; sent == 2 {
			stop()
		}
		return nil, nil
	}))
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// welcome mail to ada@example.com
	// welcome mail to alan@example.com
}
