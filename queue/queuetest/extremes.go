package queuetest

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// testHugeDurations: a backend given a duration near the largest
// time.Duration (a lease, a retry delay, a snooze) holds the job as long
// as it can; it never overflows into the past and runs the job at once,
// and every store agrees on that.
func testHugeDurations(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	huge := time.Duration(math.MaxInt64)
	retried := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", MaxAttempts: 3})
	l := h.leaseOne(t, QueueQ)
	if st, err := h.Backend.Fail(ctx, retried.ID, l.Token, backend.Failure{Error: "boom", RetryIn: huge}); err != nil || st != queue.StateRetrying {
		t.Fatalf("Fail(RetryIn: max) = %s, %v; want retrying", st, err)
	}
	if j := h.get(t, retried.ID); !j.RunAt.After(h.Clock.Now().Add(50 * 365 * 24 * time.Hour)) {
		t.Fatalf("RunAt after a retry delay of the largest duration = %v, want decades ahead", j.RunAt)
	}
	held := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k"})
	ls, err := h.Backend.Lease(ctx, backend.LeaseRequest{Queues: []string{QueueQ}, WorkerID: "w", Max: 1, LeaseFor: huge})
	if err != nil || len(ls) != 1 || ls[0].Job.ID != held.ID {
		t.Fatalf("Lease(LeaseFor: max) = %v, %v; want job %s", ls, err, held.ID)
	}
	if st, err := h.Backend.Extend(ctx, held.ID, ls[0].Token, huge); err != nil || !st.Until.After(h.Clock.Now()) {
		t.Fatalf("Extend(max) = %+v, %v; want a lease ending in the future", st, err)
	}
	h.Clock.Advance(24 * time.Hour)
	if r, err := h.Backend.RescueExpired(ctx, backend.RescueRequest{}); err != nil || r.Requeued != 0 {
		t.Fatalf("RescueExpired a day later = %+v, %v; want nothing: the lease is decades long", r, err)
	}
	if got := h.lease(t, 5, QueueQ); len(got) != 0 {
		t.Fatalf("Lease a day later handed out %d jobs, want none", len(got))
	}
}
