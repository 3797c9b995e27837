package amqpqueue

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/queue"
)

// The lane has no flows: a flow is refused before anything reaches the
// broker, naming the backend and the feature (the server answers 501 with
// that text).
func TestFlowsUnsupported(t *testing.T) {
	t.Parallel()
	c := queue.NewClient(&Backend{})
	_, err := c.EnqueueFlow(context.Background(), queue.FlowSpec{Nodes: []queue.FlowNode{
		{Name: "a", Job: queue.JobSpec{Queue: "q", Kind: "k"}}}})
	var ue *queue.UnsupportedError
	if !errors.As(err, &ue) || ue.Feature != queue.CapFlows || !strings.Contains(err.Error(), "amqpqueue does not support job flows") {
		t.Fatalf("EnqueueFlow on the lane = %v, want an *UnsupportedError for flows", err)
	}
	if _, err := c.Flow(context.Background(), "f"); !errors.Is(err, queue.ErrUnsupported) {
		t.Fatalf("Flow on the lane = %v, want ErrUnsupported", err)
	}
}
