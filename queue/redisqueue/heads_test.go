package redisqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// TestLeaseHearsTimedWorkOfOthers: a lease that read the timed sets'
// heads passes them to the next instead of reading them again, until
// timed work is added — by another process (its message on the timers
// channel) or by this one — and a due job added meanwhile is leased.
func TestLeaseHearsTimedWorkOfOthers(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		clk := clock.NewFake(epoch)
		a := s.backend(t, withClock(clk))
		other := queue.NewClient(s.backend(t, withClock(clk)))
		_, stop := a.Subscribe([]string{"hq"})
		defer stop()
		waitFor(t, "the subscriptions", func() bool { return redisqueue.Hears(a, "hq") })
		ctx := context.Background()
		req := backend.LeaseRequest{Queues: []string{"hq"}, Max: 10, LeaseFor: time.Minute, WorkerID: "w"}

		mustEnqueue(t, queue.NewClient(a), queue.JobSpec{Queue: "hq", Kind: "k"})
		if ls, err := a.Lease(ctx, req); err != nil || len(ls) != 1 {
			t.Fatalf("Lease = %d jobs, %v; want 1", len(ls), err)
		}
		if got := redisqueue.HeadsKnown(a, "hq"); got != "0" {
			t.Fatalf("after a lease read no timed work: known %q, want \"0\"", got)
		}

		later := mustEnqueue(t, other, queue.JobSpec{Queue: "hq", Kind: "k", RunAt: epoch.Add(time.Minute)})
		waitFor(t, "the timers message to reach the lease", func() bool { return redisqueue.HeadsKnown(a, "hq") == "" })
		mustEnqueue(t, queue.NewClient(a), queue.JobSpec{Queue: "hq", Kind: "k"})
		if ls, err := a.Lease(ctx, req); err != nil || len(ls) != 1 {
			t.Fatalf("Lease = %d jobs, %v; want 1", len(ls), err)
		}
		if got, want := redisqueue.HeadsKnown(a, "hq"), "1"; len(got) < len(want) {
			t.Fatalf("after a lease read the timed job: known %q, want its due time", got)
		}

		clk.Advance(2 * time.Minute)
		ls, err := a.Lease(ctx, req)
		if err != nil || len(ls) != 1 || ls[0].Job.ID != later.ID {
			t.Fatalf("Lease after the timed job is due = %v, %v; want job %s", ls, err, later.ID)
		}

		// Timed work this process adds moves the generation at once. (The
		// lease that promoted sends the next ones to the full script for a
		// second: lean.go's leanPause.)
		clk.Advance(2 * time.Second)
		mustEnqueue(t, queue.NewClient(a), queue.JobSpec{Queue: "hq", Kind: "k"})
		if _, err := a.Lease(ctx, req); err != nil {
			t.Fatal(err)
		}
		if got := redisqueue.HeadsKnown(a, "hq"); got != "0" {
			t.Fatalf("after a lean lease read no timed work: known %q, want \"0\"", got)
		}
		mustEnqueue(t, queue.NewClient(a), queue.JobSpec{Queue: "hq", Kind: "k", RunAt: clk.Now().Add(time.Hour)})
		if got := redisqueue.HeadsKnown(a, "hq"); got != "" {
			t.Errorf("after this process added timed work: known %q, want \"\" (read again)", got)
		}
	})
}
