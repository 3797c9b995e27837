package queuetest

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
)

// testOutboxConcurrentClaims has four claimers race over the same events:
// while claims last (the fake clock stands still), no event is handed out
// twice, and every one is acknowledged exactly once.
func testOutboxConcurrentClaims(t *testing.T, f Factory) {
	t.Parallel()
	h := newOutboxHarness(t, f)
	ctx := context.Background()
	const n = 200
	jobs := map[string]bool{}
	for i := 0; i < n; i++ {
		jobs[h.completeOne(t)] = true
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				cs, err := h.Outbox.ClaimEvents(ctx, 7, time.Minute)
				if err != nil {
					t.Errorf("ClaimEvents: %v", err)
					return
				}
				if len(cs) == 0 {
					return
				}
				for _, c := range cs {
					mu.Lock()
					seen[c.Event.JobID]++
					mu.Unlock()
					if err := h.Outbox.AckEvent(ctx, c.Event.ID, c.Token); err != nil {
						t.Errorf("AckEvent(%s): %v", c.Event.ID, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("claimed events of %d jobs, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 || !jobs[id] {
			t.Errorf("job %s: event claimed %d times, want once", id, k)
		}
	}
	h.Clock.Advance(2 * time.Minute)
	if left := h.claimAll(t); len(left) != 0 {
		t.Fatalf("%d events left after every one was acknowledged", len(left))
	}
}

// testOutboxWorker runs a real worker over jobs that succeed or fail for
// good: afterwards every job has exactly one event, of its outcome.
func testOutboxWorker(t *testing.T, f Factory) {
	t.Parallel()
	h := newOutboxHarness(t, f)
	ctx := context.Background()
	n := testutil.Size(100, 300)
	specs := make([]queue.JobSpec, n)
	for i := range specs {
		specs[i] = queue.JobSpec{Queue: QueueW, Kind: "k", Payload: []byte(strconv.Itoa(i))}
	}
	res, err := h.Client.EnqueueBatch(ctx, specs)
	if err != nil {
		t.Fatal(err)
	}
	w := queue.NewWorker(h.Backend, workerConfig(QueueW))
	w.Handle("k", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		if i, _ := strconv.Atoi(string(j.Payload)); i%3 == 0 {
			return nil, queue.Permanent(errFailed)
		}
		return nil, nil
	}))
	stop := testutil.Start(t, w)
	for _, r := range res {
		h.waitFinal(t, r.Job.ID)
	}
	stop()
	events := h.eventsByJob(t)
	if len(events) != n {
		t.Fatalf("%d jobs have events, want %d", len(events), n)
	}
	for i, r := range res {
		want := queue.EventJobCompleted
		if i%3 == 0 {
			want = queue.EventJobFailed
		}
		if e := events[r.Job.ID]; e.Type != want {
			t.Errorf("job %s event %q, want %q", r.Job.ID, e.Type, want)
		}
	}
}

type constError string

func (e constError) Error() string { return string(e) }

const errFailed = constError("queuetest: failed on purpose")

// waitFinal polls until the job is in a final state (see waitState).
func (h *Harness) waitFinal(t *testing.T, id string) *queue.Job {
	t.Helper()
	var j *queue.Job
	testutil.Eventually(t, "job "+id+" to finish", func() bool {
		j = h.get(t, id)
		return j.State.Final()
	})
	return j
}
