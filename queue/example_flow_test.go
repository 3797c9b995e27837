package queue_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// A flow: crawl, then extract, then summarise. Each job waits, blocked,
// until its parent has completed, and its handler reads the parent's
// result from Job.Parents.
func ExampleClient_EnqueueFlow() {
	b, done := openExample()
	defer done()
	c := queue.NewClient(b)
	ctx := context.Background()

	f, err := c.EnqueueFlow(ctx, queue.FlowSpec{
		Nodes: []queue.FlowNode{
			{Name: "crawl", Job: queue.JobSpec{Queue: "web", Kind: "crawl"}},
			{Name: "extract", Job: queue.JobSpec{Queue: "web", Kind: "extract"}},
			{Name: "summarise", Job: queue.JobSpec{Queue: "web", Kind: "summarise"}},
		},
		Edges: []queue.FlowEdge{{Parent: "crawl", Child: "extract"}, {Parent: "extract", Child: "summarise"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, j := range f.Jobs {
		fmt.Println(j.FlowNode, j.State)
	}
	// A worker runs them in order; each sees its parent's result.
	for range f.Jobs {
		ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"web"}, WorkerID: "w", Max: 1, LeaseFor: time.Minute})
		if err != nil || len(ls) != 1 {
			log.Fatal(len(ls), err)
		}
		j, _ := c.Get(ctx, ls[0].Job.ID)
		from := "nothing"
		if len(j.Parents) > 0 {
			from = string(j.Parents[0].Result)
		}
		fmt.Printf("%s runs on %s\n", j.Kind, from)
		if err := b.Complete(ctx, j.ID, ls[0].Token, []byte(j.Kind+" output")); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// crawl pending
	// extract blocked
	// summarise blocked
	// crawl runs on nothing
	// extract runs on crawl output
	// summarise runs on extract output
}

// A bad flow is refused whole, naming the field: here an edge that closes
// a cycle.
func ExampleFlowSpec_Plan() {
	node := func(n string) queue.FlowNode { return queue.FlowNode{Name: n, Job: queue.JobSpec{Queue: "q", Kind: n}} }
	_, err := queue.FlowSpec{
		Nodes: []queue.FlowNode{node("a"), node("b")},
		Edges: []queue.FlowEdge{{Parent: "a", Child: "b"}, {Parent: "b", Child: "a"}},
	}.Plan(0)
	fmt.Println(err)
	fmt.Println(errors.Is(err, queue.ErrInvalidArgument))
	// Output:
	// queue: edges[0].FlowEdge.Child makes a cycle: b → a → b
	// true
}
