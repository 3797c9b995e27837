package queuetest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// crashMode, set to "schedule", makes a crash-test process run a
// Scheduler instead of a worker.
const crashMode = "SLUICE_QUEUETEST_CRASH_MODE"

// crashTickQueue is the queue of the crash schedule's jobs.
const crashTickQueue = "crash-ticks"

// crashScheduler runs a Scheduler until SIGTERM.
func crashScheduler(open OpenFunc) error {
	b, closeFn, err := open(os.Getenv(crashDSN))
	if err != nil {
		return err
	}
	defer closeFn()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	s := queue.NewScheduler(queue.NewClient(b), queue.SchedulerConfig{
		Poll: 20 * time.Millisecond, ClaimTimeout: 300 * time.Millisecond, Logger: quiet,
	})
	return s.Run(ctx)
}

// CrashSchedules is the schedulers' crash test: three processes run a
// Scheduler on one store for a schedule ticking every second; two of
// them are killed with SIGKILL, one after the other, while ticks go on.
// Every tick from the first to the last must have exactly one job: none
// twice (the claim), none lost (the survivors finish an orphaned claim).
// It needs queue.CapSchedules and queue.CapList.
func CrashSchedules(t *testing.T, cfg CrashConfig) {
	if runtime.GOOS == "windows" {
		t.Skip("the crash test needs SIGKILL and SIGTERM")
	}
	b, closeFn, err := cfg.Open(cfg.DSN)
	if err != nil {
		t.Fatalf("open %s: %v", cfg.DSN, err)
	}
	t.Cleanup(func() { _ = closeFn() })
	SkipUnless(t, b, queue.CapSchedules, queue.CapList)
	c := queue.NewClient(b)
	sc := queue.Schedule{Name: "crash", Every: time.Second, Missed: queue.MissedCatchUp, Job: queue.JobSpec{Queue: crashTickQueue, Kind: "tick"}}
	if _, err := c.SetSchedule(context.Background(), sc); err != nil {
		t.Fatalf("SetSchedule: %v", err)
	}
	procs := make([]crashProc, 3)
	for i := range procs {
		procs[i] = startSchedulerProc(t, cfg.DSN)
	}
	want := 0
	for _, p := range procs[:2] {
		want += 2
		waitTickJobs(t, b, want)
		if err := p.cmd.Process.Kill(); err != nil { // SIGKILL
			t.Fatalf("kill: %v", err)
		}
		_ = p.cmd.Wait()
	}
	waitTickJobs(t, b, want+2)
	last := procs[2]
	_ = last.cmd.Process.Signal(syscall.SIGTERM)
	if err := last.cmd.Wait(); err != nil {
		t.Errorf("the last scheduler exited with %v after SIGTERM; output:\n%s", err, last.out.String())
	}
	checkTicks(t, b)
}

func startSchedulerProc(t *testing.T, dsn string) crashProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"=1", crashMode+"=schedule", crashDSN+"="+dsn)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start scheduler process: %v", err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return crashProc{cmd: cmd, out: out}
}

// waitTickJobs waits until the crash schedule enqueued at least n jobs.
func waitTickJobs(t *testing.T, b backend.Backend, n int) {
	t.Helper()
	testutil.Eventually(t, "the schedule to enqueue its jobs", func() bool {
		return len(tickJobs(t, b)) >= n
	})
}

// tickJobs returns the unique keys of the crash schedule's jobs.
func tickJobs(t *testing.T, b backend.Backend) []string {
	t.Helper()
	var keys []string
	f := queue.ListFilter{Queue: crashTickQueue, Limit: queue.MaxListLimit}
	for {
		page, err := b.List(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range page.Jobs {
			keys = append(keys, j.UniqueKey)
		}
		if page.Next == "" {
			return keys
		}
		f.Cursor = page.Next
	}
}

// checkTicks checks that the jobs hold consecutive ticks a second apart,
// each once.
func checkTicks(t *testing.T, b backend.Backend) {
	t.Helper()
	keys := tickJobs(t, b)
	ticks := make([]time.Time, len(keys))
	for i, k := range keys {
		at, ok := strings.CutPrefix(k, "schedule:crash@")
		tick, err := time.Parse(time.RFC3339Nano, at)
		if !ok || err != nil {
			t.Fatalf("job with unique key %q: not a tick of the schedule", k)
		}
		ticks[i] = tick
	}
	sort.Slice(ticks, func(i, j int) bool { return ticks[i].Before(ticks[j]) })
	for i := 1; i < len(ticks); i++ {
		if d := ticks[i].Sub(ticks[i-1]); d != time.Second {
			t.Errorf("ticks %v and %v are %v apart, want 1s (0 is a tick run twice, more a tick lost)", ticks[i-1], ticks[i], d)
		}
	}
	t.Logf("%d ticks, each with one job, across two SIGKILLs", len(ticks))
}
