package redisqueue_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
	"github.com/sluicehq/sluice/queue/webhook"
)

// BenchmarkCompleteOutbox measures what recording events costs a job's
// way through the backend, with the outbox off and on: "one" leases one
// job and completes it, one call after the other (as sqlitequeue's
// benchmark of the same name); "batched" leases 100 and completes them
// from 100 goroutines, so completions meet in one script run. The
// difference is the event's append inside Complete's script: one HMGET of
// the job, an INCR, an HSET and a ZADD per job.
func BenchmarkCompleteOutbox(b *testing.B) {
	for _, mode := range []struct {
		name string
		max  int
	}{{"one", 1}, {"batched", 100}} {
		for _, on := range []bool{false, true} {
			name := mode.name + "/off"
			if on {
				name = mode.name + "/on"
			}
			b.Run(name, func(b *testing.B) {
				be := benchServer(b).backend(b, redisqueue.Options{Outbox: on})
				leaseComplete(b, be, mode.max)
			})
		}
	}
}

// leaseComplete enqueues b.N jobs untimed, then leases up to max at a
// time and completes them concurrently; ns/op is per job.
func leaseComplete(b *testing.B, be *redisqueue.Backend, max int) {
	c := queue.NewClient(be)
	ctx := context.Background()
	for i := 0; i < b.N; i += 500 {
		specs := make([]queue.JobSpec, min(500, b.N-i))
		for k := range specs {
			specs[k] = queue.JobSpec{Queue: "bench", Kind: "noop"}
		}
		if _, err := c.EnqueueBatch(ctx, specs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		ls, err := be.Lease(ctx, backend.LeaseRequest{Queues: []string{"bench"}, WorkerID: "b", Max: max, LeaseFor: time.Minute})
		if err != nil || len(ls) == 0 {
			b.Fatalf("Lease = %d, %v", len(ls), err)
		}
		if len(ls) == 1 {
			if err := be.Complete(ctx, ls[0].Job.ID, ls[0].Token, nil); err != nil {
				b.Fatal(err)
			}
		} else {
			var wg sync.WaitGroup
			for _, l := range ls {
				wg.Go(func() {
					if err := be.Complete(ctx, l.Job.ID, l.Token, nil); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
		}
		done += len(ls)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkDispatchOutbox measures webhook delivery from this backend's
// outbox (as queue/webhook's BenchmarkDispatch does on SQLite): claim,
// sign, POST to a local receiver answering 204, log the attempt,
// acknowledge, with 32 events in flight; ns/op is per event.
func BenchmarkDispatchOutbox(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	be := benchServer(b).backend(b, redisqueue.Options{Outbox: true})
	d, err := webhook.New(be, webhook.Config{
		Subscriptions: []webhook.Subscription{{Name: "bench", URL: srv.URL, Secret: "k"}},
		Guard:         webhook.Guard{AllowAll: true}, Concurrency: 32, Logger: quiet,
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for done := 0; done < b.N; {
		done += completeBatch(b, be, min(b.N-done, 100))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for sent := 0; sent < b.N; {
		n, err := d.DispatchOnce(ctx)
		if err != nil || n == 0 {
			b.Fatalf("DispatchOnce = %d, %v after %d of %d", n, err, sent, b.N)
		}
		sent += n
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// completeBatch enqueues n jobs, leases and completes them, and returns n.
func completeBatch(b *testing.B, be *redisqueue.Backend, n int) int {
	ctx := context.Background()
	specs := make([]queue.JobSpec, n)
	for i := range specs {
		specs[i] = queue.JobSpec{Queue: "bench", Kind: "noop"}
	}
	if _, err := queue.NewClient(be).EnqueueBatch(ctx, specs); err != nil {
		b.Fatal(err)
	}
	ls, err := be.Lease(ctx, backend.LeaseRequest{Queues: []string{"bench"}, WorkerID: "b", Max: n, LeaseFor: time.Minute})
	if err != nil || len(ls) != n {
		b.Fatalf("Lease = %d, %v", len(ls), err)
	}
	for _, l := range ls {
		if err := be.Complete(ctx, l.Job.ID, l.Token, nil); err != nil {
			b.Fatal(err)
		}
	}
	return n
}

// BenchmarkOutboxMemory reports what the outbox keeps in Redis: bytes per
// event waiting for delivery, and per delivery log entry (with its
// indexes), as MEMORY USAGE of the outbox's keys, divided by their count.
// It needs real Redis (SLUICE_REDIS_URL); ns/op is not the point.
func BenchmarkOutboxMemory(b *testing.B) {
	if os.Getenv("SLUICE_REDIS_URL") == "" {
		b.Skip("SLUICE_REDIS_URL not set: MEMORY USAGE needs real Redis")
	}
	srv := benchServer(b)
	be := srv.backend(b, redisqueue.Options{Outbox: true})
	rc := srv.client(b)
	ctx := context.Background()
	for done := 0; done < b.N; {
		done += completeBatch(b, be, min(b.N-done, 100))
	}
	b.ReportMetric(float64(outboxBytes(b, rc, srv.prefix))/float64(b.N), "redis-B/event")
	for sent := 0; sent < b.N; {
		cs, err := be.ClaimEvents(ctx, 1000, time.Minute)
		if err != nil || len(cs) == 0 {
			b.Fatalf("ClaimEvents = %d, %v", len(cs), err)
		}
		for _, c := range cs {
			e := c.Event
			d := backend.Delivery{EventID: e.ID, EventType: e.Type, JobID: e.JobID, Subscription: "billing",
				URL: "https://billing.example.com/hooks/sluice", Attempt: 1, Status: 204, Latency: 3 * time.Millisecond,
				Outcome: backend.DeliveryOK}
			if err := be.RecordDelivery(ctx, d); err != nil {
				b.Fatal(err)
			}
			if err := be.AckEvent(ctx, e.ID, c.Token); err != nil {
				b.Fatal(err)
			}
		}
		sent += len(cs)
	}
	b.ReportMetric(float64(outboxBytes(b, rc, srv.prefix))/float64(b.N), "redis-B/delivery")
}

// outboxBytes sums MEMORY USAGE over the outbox's keys under prefix p.
func outboxBytes(b *testing.B, rc *redis.Client, p keyspace.Prefix) int64 {
	ctx := context.Background()
	var total int64
	iter := rc.Scan(ctx, 0, string(p)+"outbox:*", 1000).Iterator()
	for iter.Next(ctx) {
		n, err := rc.MemoryUsage(ctx, iter.Val(), 0).Result()
		if err != nil {
			b.Fatalf("MEMORY USAGE %s: %v", iter.Val(), err)
		}
		total += n
	}
	if err := iter.Err(); err != nil {
		b.Fatal(err)
	}
	return total
}
