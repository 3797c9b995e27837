package queuetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

const testLease = 30 * time.Second

func spec(q, kind string) queue.JobSpec { return queue.JobSpec{Queue: q, Kind: kind} }

func (h *Harness) enqueue(t *testing.T, s queue.JobSpec) *queue.Job {
	t.Helper()
	j, err := h.Client.Enqueue(context.Background(), s)
	if err != nil {
		t.Fatalf("Enqueue(%+v): %v", s, err)
	}
	CheckID(t, "Enqueue", j.ID)
	return j
}

// lease leases up to max jobs from queues with the test lease length.
func (h *Harness) lease(t *testing.T, max int, queues ...string) []queue.Lease {
	t.Helper()
	ls, err := h.Backend.Lease(context.Background(), backend.LeaseRequest{
		Queues: queues, WorkerID: "w-test", Max: max, LeaseFor: testLease,
	})
	if err != nil {
		t.Fatalf("Lease(%v, %d): %v", queues, max, err)
	}
	for _, l := range ls {
		CheckID(t, "Lease", l.Job.ID)
	}
	return ls
}

// leaseOne leases exactly one job or fails the test. A store that hands
// jobs over as a broker delivers them (the RabbitMQ lane) may have none
// yet on a loaded machine when its Lease stops waiting: an empty answer is
// asked again until the test's patience runs out. The other stores answer
// the first time.
func (h *Harness) leaseOne(t *testing.T, q string) queue.Lease {
	t.Helper()
	var ls []queue.Lease
	testutil.Eventually(t, fmt.Sprintf("a job to lease from %q", q), func() bool {
		ls = h.lease(t, 1, q)
		return len(ls) > 0
	})
	if len(ls) != 1 {
		t.Fatalf("Lease(%q): got %d jobs, want 1", q, len(ls))
	}
	return ls[0]
}

func (h *Harness) get(t *testing.T, id string) *queue.Job {
	t.Helper()
	j, err := h.Backend.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	CheckID(t, "Get", j.ID)
	return j
}

func (h *Harness) wantState(t *testing.T, id string, want queue.State) *queue.Job {
	t.Helper()
	j := h.get(t, id)
	if j.State != want {
		t.Fatalf("job %s state = %s, want %s", id, j.State, want)
	}
	return j
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: error = %v, want %v", what, err, target)
	}
}

func ids(ls []queue.Lease) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Job.ID
	}
	return out
}

func sameTime(a, b time.Time) bool {
	d := a.Sub(b)
	return d > -time.Millisecond && d < time.Millisecond
}

func count(st []queue.QueueStats, q string, s queue.State) int64 {
	for _, x := range st {
		if x.Queue == q {
			return x.Counts[s]
		}
	}
	return 0
}
