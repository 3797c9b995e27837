package sqlitequeue_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// BenchmarkEventLog measures what the event log costs a job's way through
// the backend (enqueue in batches of 100, lease, complete: three rows of
// the log per job), against the same work with the log off, in one run so
// the ratio holds on a loaded machine.
func BenchmarkEventLog(b *testing.B) {
	for _, m := range []struct {
		name   string
		events bool
	}{{"off", false}, {"on", true}} {
		b.Run(m.name, func(b *testing.B) {
			be, err := sqlitequeue.Open(filepath.Join(b.TempDir(), "q.db"), sqlitequeue.Options{Events: m.events})
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			c := queue.NewClient(be)
			ctx := context.Background()
			specs := make([]queue.JobSpec, 100)
			for i := range specs {
				specs[i] = queue.JobSpec{Queue: "bench", Kind: "noop", Payload: []byte(`{"n":1}`)}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := c.EnqueueBatch(ctx, specs); err != nil {
					b.Fatal(err)
				}
				ls, err := be.Lease(ctx, backend.LeaseRequest{Queues: []string{"bench"}, WorkerID: "w", Max: 100, LeaseFor: 1e12})
				if err != nil {
					b.Fatal(err)
				}
				for _, l := range ls {
					if err := be.Complete(ctx, l.Job.ID, l.Token, nil); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N*len(specs))/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}
