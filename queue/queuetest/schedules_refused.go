package queuetest

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// testScheduleRefused: a tick whose job the store refuses for good (here
// its group was cancelled) is recorded without a job and the schedule
// moves on: no claim is left pending to be retried, and failed, on every
// later poll. The next tick tries again.
func testScheduleRefused(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	if _, err := h.Client.CreateGroup(ctx, queue.GroupSpec{ID: "closed"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Client.CancelGroup(ctx, "closed"); err != nil {
		t.Fatal(err)
	}
	sc := everyMinute("refused", "sched-refused")
	sc.Job.Group = "closed"
	if _, err := h.Client.SetSchedule(ctx, sc); err != nil {
		t.Fatal(err)
	}
	s := h.scheduler(queue.SchedulerConfig{})
	h.runDue(t, s)
	for i := 1; i <= 2; i++ {
		h.Clock.Advance(time.Minute)
		h.runDue(t, s) // refused, yet not an error of the pass
		h.runDue(t, s)
		info, err := h.Client.Schedule(ctx, "refused")
		if err != nil {
			t.Fatal(err)
		}
		tick := Epoch.Add(time.Duration(i) * time.Minute)
		if !sameTime(info.LastTick, tick) {
			t.Fatalf("after tick %d: last tick %v, want %v", i, info.LastTick, tick)
		}
		if info.LastRun != nil && info.LastRun.JobID != "" {
			t.Fatalf("after tick %d: last run %+v, want no job", i, info.LastRun)
		}
	}
	if n := h.jobsIn(t, "sched-refused"); n != 0 {
		t.Fatalf("%d jobs stored, want none", n)
	}
}
