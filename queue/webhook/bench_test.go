package webhook_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
	"github.com/sluicehq/sluice/queue/webhook"
)

// BenchmarkDispatch measures end-to-end delivery from an SQLite outbox to a
// local receiver that answers 204: claim, signed POST, log entry,
// acknowledgement, per event. Events are made before the timer starts.
func BenchmarkDispatch(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	be, err := sqlitequeue.Open(filepath.Join(b.TempDir(), "q.db"), sqlitequeue.Options{Outbox: true})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	d, err := webhook.New(be, webhook.Config{
		Subscriptions: []webhook.Subscription{{Name: "bench", URL: srv.URL, Secret: "k"}},
		Guard:         webhook.Guard{AllowAll: true}, Concurrency: 32, Logger: quiet,
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	makeEvents(b, be, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	sent := 0
	for sent < b.N {
		n, err := d.DispatchOnce(ctx)
		if err != nil || n == 0 {
			b.Fatalf("DispatchOnce = %d, %v after %d of %d", n, err, sent, b.N)
		}
		sent += n
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// makeEvents completes n jobs, leasing and completing in batches.
func makeEvents(b *testing.B, be *sqlitequeue.Backend, n int) {
	ctx := context.Background()
	c := queue.NewClient(be)
	for n > 0 {
		k := min(n, 500)
		specs := make([]queue.JobSpec, k)
		for i := range specs {
			specs[i] = queue.JobSpec{Queue: "q", Kind: "k"}
		}
		if _, err := c.EnqueueBatch(ctx, specs); err != nil {
			b.Fatal(err)
		}
		ls, err := be.Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, WorkerID: "w", Max: k, LeaseFor: time.Hour})
		if err != nil || len(ls) != k {
			b.Fatalf("Lease = %d, %v", len(ls), err)
		}
		for _, l := range ls {
			if err := be.Complete(ctx, l.Job.ID, l.Token, nil); err != nil {
				b.Fatal(err)
			}
		}
		n -= k
	}
}
