package queuetest

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// BenchFlowFanIn measures a flow's fan-in on a fresh backend from open:
// each iteration enqueues one job (the sink) waiting for 1,000 parents
// and lets one worker (concurrency 16, both queues) run them all. It
// reports the time from the last parent's completion to the sink's start,
// read from the store's own timestamps (FinishedAt, StartedAt), as
// release-p50-ms and release-p99-ms over the iterations: the release
// (in the parent's own step), the promotion and the lease. Run it with
// -benchtime=Nx: one iteration is 1,001 jobs.
func BenchFlowFanIn(b *testing.B, open func(b *testing.B) backend.Backend) {
	be := open(b)
	c := queue.NewClient(be)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	w := queue.NewWorker(be, queue.WorkerConfig{Queues: []string{"parts", "sink"}, Concurrency: 16,
		Logger: slog.New(slog.DiscardHandler)})
	noop := queue.HandlerFunc(func(context.Context, *queue.Job) ([]byte, error) { return []byte("ok"), nil })
	w.Handle("part", noop)
	w.Handle("sink", noop)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		f, err := c.EnqueueFlow(ctx, fanIn(queue.MaxParents))
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, waitSink(b, c, f))
	}
	b.StopTimer()
	stop()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	slices.Sort(lat)
	at := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(at(0.5), "release-p50-ms")
	b.ReportMetric(at(0.99), "release-p99-ms")
}

// fanIn is a flow of n parts and a sink waiting for them all.
func fanIn(n int) queue.FlowSpec {
	f := queue.FlowSpec{Nodes: []queue.FlowNode{{Name: "sink", Job: queue.JobSpec{Queue: "sink", Kind: "sink"}}}}
	for i := range n {
		name := fmt.Sprintf("p%d", i)
		f.Nodes = append(f.Nodes, queue.FlowNode{Name: name, Job: queue.JobSpec{Queue: "parts", Kind: "part"}})
		f.Edges = append(f.Edges, queue.FlowEdge{Parent: name, Child: "sink"})
	}
	return f
}

// waitSink waits for the flow's sink to complete and returns the time
// from its last parent's end to its start.
func waitSink(b *testing.B, c *queue.Client, f *queue.Flow) time.Duration {
	ctx := context.Background()
	id := f.Job("sink").ID
	deadline := time.Now().Add(time.Minute)
	for {
		j, err := c.Get(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		if j.State == queue.StateCompleted {
			g, err := c.Flow(ctx, f.ID)
			if err != nil {
				b.Fatal(err)
			}
			var last time.Time
			for _, p := range g.Jobs {
				if p.ID != id && p.FinishedAt.After(last) {
					last = p.FinishedAt
				}
			}
			return j.StartedAt.Sub(last)
		}
		if time.Now().After(deadline) {
			b.Fatalf("sink %s still %s after a minute", id, j.State)
		}
		time.Sleep(5 * time.Millisecond) // a benchmark's poll, not a test's timing
	}
}
