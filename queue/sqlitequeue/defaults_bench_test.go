//go:build unix

package sqlitequeue_test

import (
	"context"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// BenchmarkServerDefaultsCost measures what the event log and the outbox
// (both on in `sluice serve` by default) cost a job's way through the
// backend: enqueue in batches of 100, lease, complete. Each iteration runs
// one round of 1000 jobs on a store with both off, one with the log only
// and one with both, in rotating order, so all see the same machine; it
// reports the medians of jobs/s (wall) and of CPU µs per job (getrusage:
// the store is in process), and their ratios to the store with both off.
func BenchmarkServerDefaultsCost(b *testing.B) {
	ctx := context.Background()
	type store struct {
		name      string
		be        *sqlitequeue.Backend
		c         *queue.Client
		rate, cpu []float64
	}
	var stores []*store
	for _, m := range []struct {
		name           string
		events, outbox bool
	}{{"off", false, false}, {"log", true, false}, {"log+outbox", true, true}} {
		be, err := sqlitequeue.Open(filepath.Join(b.TempDir(), m.name+".db"), sqlitequeue.Options{Events: m.events, Outbox: m.outbox})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { be.Close() })
		stores = append(stores, &store{name: m.name, be: be, c: queue.NewClient(be)})
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		for k := range stores {
			s := stores[(i+k)%len(stores)]
			jobs, wall, used := defaultsRound(ctx, b, s.be, s.c)
			s.rate = append(s.rate, float64(jobs)/wall.Seconds())
			s.cpu = append(s.cpu, float64(used.Microseconds())/float64(jobs))
		}
	}
	b.StopTimer()
	base := stores[0]
	for _, s := range stores {
		b.ReportMetric(median(s.rate), s.name+"-jobs/s")
		b.ReportMetric(median(s.cpu), s.name+"-cpu-µs/job")
		if s != base {
			b.ReportMetric(median(s.rate)/median(base.rate), s.name+"/off-rate")
			b.ReportMetric(median(s.cpu)/median(base.cpu), s.name+"/off-cpu")
		}
	}
}

// defaultsRound moves 1000 jobs through be and returns how many, the wall
// time and the process's CPU time it took.
func defaultsRound(ctx context.Context, b *testing.B, be *sqlitequeue.Backend, c *queue.Client) (int, time.Duration, time.Duration) {
	specs := make([]queue.JobSpec, 100)
	for i := range specs {
		specs[i] = queue.JobSpec{Queue: "bench", Kind: "noop", Payload: []byte(`{"n":1}`)}
	}
	cpu0, t0 := cpuTime(b), time.Now()
	for range 10 {
		if _, err := c.EnqueueBatch(ctx, specs); err != nil {
			b.Fatal(err)
		}
		ls, err := be.Lease(ctx, backend.LeaseRequest{Queues: []string{"bench"}, WorkerID: "w", Max: 100, LeaseFor: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range ls {
			if err := be.Complete(ctx, l.Job.ID, l.Token, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	return 1000, time.Since(t0), cpuTime(b) - cpu0
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
