package queuetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// testScheduleMissed stops the schedulers for ten ticks and checks what
// each missed-tick policy runs when one comes back.
func testScheduleMissed(t *testing.T, f Factory) {
	t.Parallel()
	cases := []struct {
		policy  queue.MissedPolicy
		catchUp int
		want    int64
	}{
		{"", 0, 1},
		{queue.MissedOnce, 0, 1},
		{queue.MissedCatchUp, 0, 10},
		{queue.MissedCatchUp, 4, 4},
		{queue.MissedSkip, 0, 0},
	}
	for _, tc := range cases {
		t.Run(string(tc.policy)+fmt.Sprint(tc.catchUp), func(t *testing.T) {
			h := NewHarness(t, f)
			s := everyMinute("missed", "sched-missed")
			s.Missed, s.CatchUp, s.Grace = tc.policy, tc.catchUp, 10*time.Second
			if _, err := h.Client.SetSchedule(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			// Ten ticks passed, the latest 30s ago: later than Grace.
			h.Clock.Advance(10*time.Minute + 30*time.Second)
			sc := h.scheduler(queue.SchedulerConfig{})
			h.runDue(t, sc)
			if n := h.jobsIn(t, "sched-missed"); n != tc.want {
				t.Fatalf("policy %q catch-up %d after 10 missed ticks: %d jobs, want %d", tc.policy, tc.catchUp, n, tc.want)
			}
			// The ticks after downtime run as usual, whatever the policy.
			h.Clock.Advance(30 * time.Second)
			h.runDue(t, sc)
			if n := h.jobsIn(t, "sched-missed"); n != tc.want+1 {
				t.Fatalf("policy %q, the tick after: %d jobs, want %d", tc.policy, n, tc.want+1)
			}
		})
	}
}

// testScheduleOverlap checks the overlap policies while the last run is
// still pending.
func testScheduleOverlap(t *testing.T, f Factory) {
	t.Parallel()
	cases := []struct {
		policy queue.OverlapPolicy
		// jobs after two ticks with the first run unfinished, then after
		// it finished and the next pass.
		busy, after int64
	}{
		{queue.OverlapAllow, 2, 2},
		{queue.OverlapSkip, 1, 1},
		{queue.OverlapWait, 1, 2},
	}
	for _, tc := range cases {
		t.Run(string(tc.policy), func(t *testing.T) {
			h := NewHarness(t, f)
			q := "sched-overlap"
			s := everyMinute("overlap", q)
			s.Overlap = tc.policy
			if _, err := h.Client.SetSchedule(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			sc := h.scheduler(queue.SchedulerConfig{})
			h.Clock.Advance(time.Minute)
			h.runDue(t, sc)
			h.Clock.Advance(time.Minute)
			h.runDue(t, sc)
			if n := h.jobsIn(t, q); n != tc.busy {
				t.Fatalf("overlap %q, two ticks with the first run pending: %d jobs, want %d", tc.policy, n, tc.busy)
			}
			l := h.leaseOne(t, q)
			if err := h.Backend.Complete(context.Background(), l.Job.ID, l.Token, nil); err != nil {
				t.Fatal(err)
			}
			h.runDue(t, sc)
			if n := h.jobsIn(t, q); n != tc.after {
				t.Fatalf("overlap %q, after the first run finished: %d jobs, want %d", tc.policy, n, tc.after)
			}
		})
	}
}

func testSchedulePauseTrigger(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	q := "sched-pause"
	if _, err := h.Client.SetSchedule(ctx, everyMinute("p", q)); err != nil {
		t.Fatal(err)
	}
	info, err := h.Client.PauseSchedule(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if !info.Paused || len(info.Next) != 0 {
		t.Errorf("paused schedule = paused %v next %v; want paused, no next ticks", info.Paused, info.Next)
	}
	sc := h.scheduler(queue.SchedulerConfig{})
	h.Clock.Advance(5 * time.Minute)
	h.runDue(t, sc)
	if n := h.jobsIn(t, q); n != 0 {
		t.Fatalf("paused for 5 ticks: %d jobs, want 0", n)
	}
	j, err := h.Client.TriggerSchedule(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	info, err = h.Client.ResumeSchedule(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if info.Paused || !sameTime(info.LastTick, h.Clock.Now()) {
		t.Errorf("resumed = paused %v last tick %v; want running, anchored at %v", info.Paused, info.LastTick, h.Clock.Now())
	}
	if info.LastRun == nil || info.LastRun.JobID != j.ID || !info.LastRun.Tick.IsZero() {
		t.Errorf("LastRun = %+v, want the triggered job %s with no tick", info.LastRun, j.ID)
	}
	h.runDue(t, sc)
	if n := h.jobsIn(t, q); n != 1 {
		t.Fatalf("after resume: %d jobs, want only the triggered one (paused ticks never run)", n)
	}
	h.Clock.Advance(time.Minute)
	h.runDue(t, sc)
	if n := h.jobsIn(t, q); n != 2 {
		t.Fatalf("a tick after resume: %d jobs, want 2", n)
	}
}

// testScheduleDeadClaimer claims a tick as a scheduler that dies before
// enqueuing would: after ClaimTimeout another scheduler enqueues it, once.
func testScheduleDeadClaimer(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	q := "sched-dead"
	info, err := h.Client.SetSchedule(ctx, everyMinute("dead", q))
	if err != nil {
		t.Fatal(err)
	}
	h.Clock.Advance(time.Minute)
	st := h.Backend.Features().Schedules
	tick := info.LastTick.Add(time.Minute)
	if ok, err := st.ClaimTick(ctx, "dead", info.LastTick, tick, true); !ok || err != nil {
		t.Fatalf("ClaimTick = %v, %v", ok, err)
	}
	sc := h.scheduler(queue.SchedulerConfig{ClaimTimeout: 30 * time.Second})
	h.runDue(t, sc)
	if n := h.jobsIn(t, q); n != 0 {
		t.Fatalf("within the claim timeout: %d jobs, want 0 (the claimer may still enqueue)", n)
	}
	h.Clock.Advance(30 * time.Second)
	other := h.scheduler(queue.SchedulerConfig{ClaimTimeout: 30 * time.Second})
	h.runDue(t, sc)
	h.runDue(t, other)
	if n := h.jobsIn(t, q); n != 1 {
		t.Fatalf("after the claim timeout: %d jobs, want 1", n)
	}
	got, err := h.Client.Schedule(ctx, "dead")
	if err != nil {
		t.Fatal(err)
	}
	if got.LastRun == nil || !sameTime(got.LastRun.Tick, tick) {
		t.Errorf("LastRun = %+v, want the recovered tick %v", got.LastRun, tick)
	}
}
