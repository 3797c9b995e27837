package sqlstore

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// The scheduler itself runs on a store's transaction and is tested by
// each store's conformance suite against internal/sched's model; these
// are the pure rules beside it.

func TestFailOutcome(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano()
	cases := []struct {
		name           string
		f              backend.Failure
		attempt, max   int
		cancel         bool
		want           queue.State
		finished, next int64
	}{
		{"retry", backend.Failure{Error: "x", RetryIn: time.Second}, 1, 3, false, queue.StateRetrying, 0, now + int64(time.Second)},
		{"retry now", backend.Failure{Error: "x"}, 1, 3, false, queue.StateRetrying, 0, now},
		{"spent", backend.Failure{Error: "x", RetryIn: time.Second}, 3, 3, false, queue.StateFailed, now, 0},
		{"permanent", backend.Failure{Error: "x", Permanent: true}, 1, 3, false, queue.StateFailed, now, 0},
		{"cancelled", backend.Failure{Error: "x", Permanent: true}, 3, 3, true, queue.StateCancelled, now, 0},
	}
	for _, c := range cases {
		next, errs, finished, retryAt, err := FailOutcome(c.f, c.attempt, c.max, c.cancel, nil, now)
		if err != nil || next != c.want || finished != c.finished || retryAt != c.next {
			t.Errorf("%s: FailOutcome = %s, finished %d, retry at %d, %v; want %s, %d, %d",
				c.name, next, finished, retryAt, err, c.want, c.finished, c.next)
		}
		var hist []queue.AttemptError
		if err := json.Unmarshal([]byte(errs), &hist); err != nil || len(hist) != 1 || hist[0].Error != "x" ||
			hist[0].Attempt != c.attempt || !hist[0].At.Equal(time.Unix(0, now)) {
			t.Errorf("%s: history %s, %v; want this attempt's error", c.name, errs, err)
		}
	}
}

func TestFailOutcomeKeepsLastErrors(t *testing.T) {
	var hist []queue.AttemptError
	for i := range queue.MaxErrorHistory {
		hist = append(hist, queue.AttemptError{Attempt: i + 1, Error: "old"})
	}
	_, errs, _, _, err := FailOutcome(backend.Failure{Error: "new"}, queue.MaxErrorHistory+1, 100, false, hist, 1)
	if err != nil {
		t.Fatal(err)
	}
	var got []queue.AttemptError
	if err := json.Unmarshal([]byte(errs), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != queue.MaxErrorHistory || got[0].Attempt != 2 || got[len(got)-1].Error != "new" {
		t.Errorf("history = %+v; want the newest %d, ending with the new error", got, queue.MaxErrorHistory)
	}
}

func TestSnoozeState(t *testing.T) {
	if got := SnoozeState(0); got != queue.StatePending {
		t.Errorf("SnoozeState(0) = %s, want pending", got)
	}
	if got := SnoozeState(time.Second); got != queue.StateScheduled {
		t.Errorf("SnoozeState(1s) = %s, want scheduled", got)
	}
}

func TestGroupRetention(t *testing.T) {
	cases := []struct {
		r    queue.Retention
		want time.Duration
	}{
		{queue.Retention{}, 0},
		{queue.Retention{Completed: time.Hour, Failed: 2 * time.Hour, Cancelled: time.Minute}, 2 * time.Hour},
		{queue.Retention{Completed: time.Hour, Failed: -1}, -1},
	}
	for _, c := range cases {
		if got := GroupRetention(c.r); got != c.want {
			t.Errorf("GroupRetention(%+v) = %s, want %s", c.r, got, c.want)
		}
	}
}

func TestSchedQueues(t *testing.T) {
	got := SchedQueues([]string{"a", "b", "a", "c", "b"})
	if !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("SchedQueues = %v, want [a b c]", got)
	}
}

func TestGroupRowLimits(t *testing.T) {
	g := &GroupRow{Spec: queue.GroupSpec{MinInterval: time.Second}, LastStart: 10 * int64(time.Second)}
	if got, want := g.BlockedUntil(), 11*int64(time.Second); got != want {
		t.Errorf("BlockedUntil = %d, want %d (last start plus interval)", got, want)
	}
	g.PausedUntil = 20 * int64(time.Second)
	if got, want := g.BlockedUntil(), 20*int64(time.Second); got != want {
		t.Errorf("BlockedUntil = %d, want %d (the pause's end)", got, want)
	}
	if g.Closed() {
		t.Error("a group neither cancelled nor done is closed")
	}
	g.DoneAt = 1
	if !g.Closed() {
		t.Error("a done group is open")
	}
}
