package mux_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/mux"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// A router keeps most queues on the default backend and places some on
// another (in production, "scrape" would be on the RabbitMQ lane). Each
// spec is checked against its own queue's backend.
func Example() {
	dir, _ := os.MkdirTemp("", "mux-example")
	defer os.RemoveAll(dir)
	main, _ := sqlitequeue.Open(filepath.Join(dir, "jobs.db"), sqlitequeue.Options{})
	defer main.Close()
	fast, _ := sqlitequeue.Open(filepath.Join(dir, "fast.db"), sqlitequeue.Options{})
	defer fast.Close()
	lane := noUnique{fast} // a backend without unique keys, as the lane is

	m, err := mux.New(main, mux.Route{Name: "lane", Backend: lane, Queues: []string{"scrape"}})
	if err != nil {
		panic(err)
	}
	c := queue.NewClient(m)
	ctx := context.Background()
	res, err := c.EnqueueBatch(ctx, []queue.JobSpec{
		{Queue: "report", Kind: "monthly"},
		{Queue: "scrape", Kind: "page"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res[0].Job.ID, res[1].Job.ID)

	_, err = c.Enqueue(ctx, queue.JobSpec{Queue: "scrape", Kind: "page", UniqueKey: "https://example.com"})
	fmt.Println(errors.Is(err, queue.ErrUnsupported))
	_, err = c.Enqueue(ctx, queue.JobSpec{Queue: "report", Kind: "monthly", UniqueKey: "2030-01"})
	fmt.Println(err)
	// Output:
	// 1 lane.1
	// true
	// <nil>
}

type noUnique struct{ *sqlitequeue.Backend }

func (n noUnique) Features() backend.Features {
	f := n.Backend.Features()
	f.Name, f.Capabilities = "nounique", f.Capabilities.Without(queue.CapUnique)
	return f
}
