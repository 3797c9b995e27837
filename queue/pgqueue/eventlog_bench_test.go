package pgqueue_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/pgqueue"
)

// BenchmarkProcessRecorded is BenchmarkProcess at concurrency 10 with the
// outbox and the event log off and on, one after the other in each run
// (compare them with -count), to show what recording events costs.
func BenchmarkProcessRecorded(b *testing.B) {
	for _, c := range []struct {
		name string
		opts pgqueue.Options
	}{
		{"off", pgqueue.Options{}},
		{"outbox", pgqueue.Options{Outbox: true}},
		{"events", pgqueue.Options{Events: true}},
		{"both", pgqueue.Options{Outbox: true, Events: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			url := pgtest.URL(b)
			opts := c.opts
			opts.Schema, opts.MaxConns = pgtest.Schema(b, url), benchConns
			be, err := pgqueue.Open(context.Background(), url, opts)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { be.Close() })
			fill(b, be, b.N)
			var done atomic.Int64
			all := make(chan struct{})
			w := queue.NewWorker(be, queue.WorkerConfig{Queues: []string{"bench"}, Concurrency: 10, Logger: quietLog})
			w.Handle("noop", queue.HandlerFunc(func(context.Context, *queue.Job) ([]byte, error) {
				if done.Add(1) == int64(b.N) {
					close(all)
				}
				return nil, nil
			}))
			b.ResetTimer()
			ctx, stop := context.WithCancel(context.Background())
			stopped := make(chan error)
			go func() { stopped <- w.Run(ctx) }()
			<-all
			b.StopTimer()
			stop()
			<-stopped
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}
