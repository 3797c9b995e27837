package queue_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/queue"
)

// Reconfigure changes a running client's admission and priority, such as
// after a configuration file changed: here a depth cap is lifted.
func ExampleClient_Reconfigure() {
	b, done := openExample()
	defer done()
	c := queue.NewClient(b, queue.ClientConfig{Admission: queue.Admission{MaxDepth: 1}})
	ctx := context.Background()
	enqueue := func() {
		_, err := c.Enqueue(ctx, queue.JobSpec{Queue: "mail", Kind: "send"})
		fmt.Println("overloaded:", errors.Is(err, queue.ErrOverloaded))
	}
	enqueue()
	enqueue()
	c.Reconfigure(queue.ClientConfig{Admission: queue.Admission{MaxDepth: 10}})
	enqueue()
	// Output:
	// overloaded: false
	// overloaded: true
	// overloaded: false
}
