package amqpqueue

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
)

// TestDelaysAndRetries runs on the real clock with short delay buckets: a
// delayed job, a retried one and a snoozed one each run again no earlier
// than asked (delays are served by the broker's TTL queues, in hops).
func TestDelaysAndRetries(t *testing.T) {
	t.Parallel()
	b := open(t, Options{DelayBuckets: []time.Duration{50 * time.Millisecond, 200 * time.Millisecond, time.Second}})
	c := queue.NewClient(b)
	const retryIn, snoozeFor = 300 * time.Millisecond, 250 * time.Millisecond
	var mu sync.Mutex
	starts := map[string][]time.Time{}
	ends := map[string][]time.Time{}
	w := queue.NewWorker(b, queue.WorkerConfig{
		Queues: []string{"d"}, Logger: quiet, PollInterval: 10 * time.Millisecond,
		Backoff: func(int, error) time.Duration { return retryIn },
	})
	w.Handle("k", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		mu.Lock()
		defer func() { ends[j.ID] = append(ends[j.ID], time.Now()); mu.Unlock() }()
		starts[j.ID] = append(starts[j.ID], time.Now())
		switch {
		case string(j.Payload) == "retry" && j.Attempt == 1:
			return nil, errors.New("try again")
		case string(j.Payload) == "snooze" && len(starts[j.ID]) == 1:
			return nil, queue.Snooze(snoozeFor)
		}
		return []byte("ok"), nil
	}))
	runAt := time.Now().Add(700 * time.Millisecond)
	delayed, err := c.Enqueue(bg(), queue.JobSpec{Queue: "d", Kind: "k", RunAt: runAt})
	if err != nil {
		t.Fatal(err)
	}
	if j, _ := b.Get(bg(), delayed.ID); j.State != queue.StateScheduled {
		t.Fatalf("delayed job is %s, want scheduled", j.State)
	}
	retry, _ := c.Enqueue(bg(), queue.JobSpec{Queue: "d", Kind: "k", Payload: []byte("retry")})
	snooze, _ := c.Enqueue(bg(), queue.JobSpec{Queue: "d", Kind: "k", Payload: []byte("snooze")})
	testutil.Start(t, w)
	for _, id := range []string{delayed.ID, retry.ID, snooze.ID} {
		waitState(t, b, id, queue.StateCompleted)
	}
	mu.Lock()
	defer mu.Unlock()
	if s := starts[delayed.ID]; len(s) != 1 || s[0].Before(runAt) {
		t.Errorf("delayed job started %v, want once, not before %v", s, runAt)
	}
	if s := starts[retry.ID]; len(s) != 2 || s[1].Before(ends[retry.ID][0].Add(retryIn)) {
		t.Errorf("retried job started %v, want twice, %s apart at least", s, retryIn)
	}
	if s := starts[snooze.ID]; len(s) != 2 || s[1].Before(ends[snooze.ID][0].Add(snoozeFor)) {
		t.Errorf("snoozed job started %v, want twice, %s apart at least", s, snoozeFor)
	}
	checks := []struct {
		id            string
		attempt, errs int
	}{{delayed.ID, 1, 0}, {retry.ID, 2, 1}, {snooze.ID, 1, 0}}
	for _, c := range checks {
		j, _ := b.Get(bg(), c.id)
		if j.Attempt != c.attempt || len(j.Errors) != c.errs {
			t.Errorf("job %s: attempt %d, %d errors; want %d, %d", c.id, j.Attempt, len(j.Errors), c.attempt, c.errs)
		}
	}
}
