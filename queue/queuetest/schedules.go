package queuetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
)

// RunSchedules checks a backend's ScheduleStore (CapSchedules) through
// queue.Client and queue.Scheduler: definitions kept and refused, ticks
// claimed once however many schedulers race, the missed-tick and overlap
// policies, pauses, runs by hand and a claim whose scheduler died.
func RunSchedules(t *testing.T, f Factory) {
	runTests(t, f, []test{
		{"Store", needs(queue.CapSchedules), testScheduleStore},
		{"Owned", needs(queue.CapSchedules), testScheduleOwned},
		{"Ticks", needs(queue.CapSchedules), testScheduleTicks},
		{"ExactlyOnce", needs(queue.CapSchedules), testScheduleExactlyOnce},
		{"ClaimRace", needs(queue.CapSchedules), testScheduleClaimRace},
		{"Missed", needs(queue.CapSchedules), testScheduleMissed},
		{"Overlap", needs(queue.CapSchedules), testScheduleOverlap},
		{"PauseTrigger", needs(queue.CapSchedules), testSchedulePauseTrigger},
		{"DeadClaimer", needs(queue.CapSchedules), testScheduleDeadClaimer},
		{"Refused", needs(queue.CapSchedules, queue.CapGroups), testScheduleRefused},
	})
}

// everyMinute is a schedule that enqueues a job of kind "tick" on q each
// minute.
func everyMinute(name, q string) queue.Schedule {
	return queue.Schedule{Name: name, Every: time.Minute, Job: queue.JobSpec{Queue: q, Kind: "tick"}}
}

// jobsIn counts the jobs of q in every state.
func (h *Harness) jobsIn(t *testing.T, q string) int64 {
	t.Helper()
	st, err := h.Client.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, s := range st {
		if s.Queue == q {
			for _, c := range s.Counts {
				n += c
			}
		}
	}
	return n
}

// runDue runs one pass of a scheduler on the harness's clock.
func (h *Harness) runDue(t *testing.T, s *queue.Scheduler) {
	t.Helper()
	if _, err := s.RunDue(context.Background()); err != nil {
		t.Fatalf("RunDue: %v", err)
	}
}

func (h *Harness) scheduler(cfg queue.SchedulerConfig) *queue.Scheduler {
	cfg.Clock = h.Clock
	return queue.NewScheduler(h.Client, cfg)
}

func testScheduleStore(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	if _, err := h.Client.Schedule(ctx, "nope"); !errors.Is(err, queue.ErrScheduleNotFound) {
		t.Fatalf("Schedule(missing) = %v, want ErrScheduleNotFound", err)
	}
	bad := everyMinute("", "sched-store")
	var ia *queue.InvalidArgumentError
	if _, err := h.Client.SetSchedule(ctx, bad); !errors.As(err, &ia) || ia.Field != "Schedule.Name" {
		t.Fatalf("SetSchedule(no name) = %v, want an InvalidArgumentError naming Schedule.Name", err)
	}
	s := everyMinute("b-report", "sched-store")
	s.Job.Payload = []byte(`{"n":1}`)
	info, err := h.Client.SetSchedule(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if info.Source != queue.SourceAPI || info.Paused || !sameTime(info.LastTick, Epoch) {
		t.Errorf("new schedule = source %q paused %v last tick %v; want api, not paused, anchored at %v", info.Source, info.Paused, info.LastTick, Epoch)
	}
	if len(info.Next) != queue.NextTicks || !sameTime(info.Next[0], Epoch.Add(time.Minute)) {
		t.Errorf("Next = %v, want %d ticks from %v", info.Next, queue.NextTicks, Epoch.Add(time.Minute))
	}
	if string(info.Schedule.Job.Payload) != `{"n":1}` || info.Schedule.Every != time.Minute {
		t.Errorf("stored definition = %+v, want the one set", info.Schedule)
	}
	cron := queue.Schedule{Name: "a-nightly", Cron: "30 2 * * *", TimeZone: "America/New_York", Job: s.Job}
	if _, err := h.Client.SetSchedule(ctx, cron); err != nil {
		t.Fatal(err)
	}
	all, err := h.Client.Schedules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Schedule.Name != "a-nightly" || all[1].Schedule.Name != "b-report" {
		t.Fatalf("Schedules = %d schedules, want a-nightly then b-report", len(all))
	}
	if err := h.Client.DeleteSchedule(ctx, "b-report"); err != nil {
		t.Fatal(err)
	}
	if err := h.Client.DeleteSchedule(ctx, "b-report"); !errors.Is(err, queue.ErrScheduleNotFound) {
		t.Errorf("second DeleteSchedule = %v, want ErrScheduleNotFound", err)
	}
}

func testScheduleOwned(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	api := everyMinute("shared", "sched-owned")
	if _, err := h.Client.SetSchedule(ctx, api); err != nil {
		t.Fatal(err)
	}
	conf := everyMinute("shared", "sched-owned")
	conf.Every = time.Hour
	if err := h.Client.SyncSchedules(ctx, queue.SourceConfig, []queue.Schedule{conf, everyMinute("other", "sched-owned")}); err != nil {
		t.Fatal(err)
	}
	got, err := h.Client.Schedule(ctx, "shared")
	if err != nil {
		t.Fatal(err)
	}
	if got.Source != queue.SourceConfig || got.Schedule.Every != time.Hour {
		t.Errorf("after sync, shared = source %q every %s; want the config's (config wins)", got.Source, got.Schedule.Every)
	}
	var owned *queue.ScheduleOwnedError
	if _, err := h.Client.SetSchedule(ctx, api); !errors.As(err, &owned) || owned.Source != queue.SourceConfig {
		t.Errorf("SetSchedule over a config schedule = %v, want a ScheduleOwnedError", err)
	}
	if err := h.Client.DeleteSchedule(ctx, "shared"); !errors.Is(err, queue.ErrScheduleOwned) {
		t.Errorf("DeleteSchedule of a config schedule = %v, want ErrScheduleOwned", err)
	}
	if err := h.Client.SyncSchedules(ctx, queue.SourceConfig, []queue.Schedule{conf}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Client.Schedule(ctx, "other"); !errors.Is(err, queue.ErrScheduleNotFound) {
		t.Errorf("a schedule removed from the config = %v, want ErrScheduleNotFound", err)
	}
	dup := []queue.Schedule{conf, conf}
	var ia *queue.InvalidArgumentError
	if err := h.Client.SyncSchedules(ctx, queue.SourceConfig, dup); !errors.As(err, &ia) || ia.Field != "schedules[1].Schedule.Name" {
		t.Errorf("SyncSchedules with a name twice = %v, want schedules[1].Schedule.Name", err)
	}
}

func testScheduleTicks(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	if _, err := h.Client.SetSchedule(ctx, everyMinute("ticks", "sched-ticks")); err != nil {
		t.Fatal(err)
	}
	s := h.scheduler(queue.SchedulerConfig{})
	h.runDue(t, s)
	if n := h.jobsIn(t, "sched-ticks"); n != 0 {
		t.Fatalf("before the first tick: %d jobs, want 0", n)
	}
	for i := 1; i <= 3; i++ {
		h.Clock.Advance(time.Minute)
		h.runDue(t, s)
		h.runDue(t, s) // a second pass finds nothing new
		if n := h.jobsIn(t, "sched-ticks"); n != int64(i) {
			t.Fatalf("after tick %d: %d jobs, want %d", i, n, i)
		}
	}
	info, err := h.Client.Schedule(ctx, "ticks")
	if err != nil {
		t.Fatal(err)
	}
	tick := Epoch.Add(3 * time.Minute)
	if info.LastRun == nil || !sameTime(info.LastRun.Tick, tick) || info.LastRun.State != queue.StatePending {
		t.Fatalf("LastRun = %+v, want the tick at %v, pending", info.LastRun, tick)
	}
	j := h.get(t, info.LastRun.JobID)
	if j.UniqueKey != queue.TickKey("ticks", tick) || j.Kind != "tick" {
		t.Errorf("the tick's job = key %q kind %q, want %q and tick", j.UniqueKey, j.Kind, queue.TickKey("ticks", tick))
	}
	if !sameTime(info.Next[0], tick.Add(time.Minute)) {
		t.Errorf("Next[0] = %v, want %v", info.Next[0], tick.Add(time.Minute))
	}
}

// testScheduleExactlyOnce runs five schedulers on one store and 200 ticks
// of a fake clock: exactly one job per tick.
func testScheduleExactlyOnce(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := h.Client.SetSchedule(ctx, everyMinute("once", "sched-once")); err != nil {
		t.Fatal(err)
	}
	const schedulers, ticks = 5, 200
	var wg sync.WaitGroup
	for i := 0; i < schedulers; i++ {
		s := h.scheduler(queue.SchedulerConfig{Poll: time.Hour})
		wg.Add(1)
		go func() { defer wg.Done(); _ = s.Run(ctx) }()
	}
	defer func() { cancel(); wg.Wait() }()
	for i := 1; i <= ticks; i++ {
		h.Clock.BlockUntil(schedulers)
		h.Clock.Advance(time.Minute)
		testutil.Eventually(t, fmt.Sprintf("the job of tick %d", i), func() error {
			if n := h.jobsIn(t, "sched-once"); n != int64(i) {
				return fmt.Errorf("%d jobs", n)
			}
			return nil
		})
	}
	cancel()
	wg.Wait()
	if n := h.jobsIn(t, "sched-once"); n != ticks {
		t.Fatalf("%d schedulers, %d ticks: %d jobs, want %d", schedulers, ticks, n, ticks)
	}
}

// testScheduleClaimRace claims one tick from many goroutines at once:
// one claim wins.
func testScheduleClaimRace(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	info, err := h.Client.SetSchedule(ctx, everyMinute("race", "sched-race"))
	if err != nil {
		t.Fatal(err)
	}
	st := h.Backend.Features().Schedules
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := st.ClaimTick(ctx, "race", info.LastTick, info.LastTick.Add(time.Minute), true)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				won++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("8 claims of one tick: %d won, want 1", won)
	}
	if ok, err := st.ClaimTick(ctx, "race", info.LastTick.Add(time.Minute), info.LastTick.Add(2*time.Minute), true); ok || err != nil {
		t.Errorf("a claim while the last one is unfinished = %v, %v; want false", ok, err)
	}
}
