package queue_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/queue"
)

// A queue with a depth cap refuses enqueues once it is full, with an
// error that says when to try again (a server answers it with 503 and
// Retry-After). A load monitor (overload.Monitor) plugs in the same way,
// through Admission.Monitor.
func ExampleAdmission() {
	b, done := openExample()
	defer done()
	c := queue.NewClient(b, queue.ClientConfig{Admission: queue.Admission{MaxDepth: 2}})
	ctx := context.Background()
	for i := range 3 {
		_, err := c.Enqueue(ctx, queue.JobSpec{Queue: "mail", Kind: "send"})
		var oe *queue.OverloadedError
		if errors.As(err, &oe) {
			fmt.Printf("job %d: %s; retry after %s\n", i, oe.Reason, oe.RetryAfter())
			continue
		}
		fmt.Printf("job %d: %v\n", i, err)
	}
	// Output:
	// job 0: <nil>
	// job 1: <nil>
	// job 2: queue mail is over its depth cap: 2 jobs waiting + 1 > cap 2; retry after 5s
}
