package queuetest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// Environment of a crash-test worker process.
const (
	crashEnv    = "SLUICE_QUEUETEST_CRASH_WORKER" // set to "1" in worker processes
	crashDSN    = "SLUICE_QUEUETEST_CRASH_DSN"
	crashRunLog = "SLUICE_QUEUETEST_CRASH_RUNLOG"
	crashRole   = "SLUICE_QUEUETEST_CRASH_ROLE" // "first" (killed) or "second"
	crashHold   = "SLUICE_QUEUETEST_CRASH_HOLD" // the first worker's start from which jobs hold until the kill
)

// crashKind is the job kind the crash test runs.
const crashKind = "crash"

// OpenFunc opens the backend named by dsn; it is called in the test process
// and in every worker process, which must all see the same jobs. close
// releases it.
type OpenFunc func(dsn string) (b backend.Backend, close func() error, err error)

// CrashConfig configures Crash.
type CrashConfig struct {
	// DSN names the shared backend (a file path, a Redis URL with a
	// prefix, ...); it is handed to Open in every process.
	DSN string
	// Open opens the backend named by a DSN.
	Open OpenFunc
	// Jobs is how many jobs to run; default 300.
	Jobs int
	// Group, when set, puts every job in a group of that id with a
	// completion job (kind "crash-report", queue "crash-reports", which
	// no worker runs): once all jobs completed, despite the kill and the
	// rescue of the jobs in flight, the group must be done with exactly
	// one completion job. It needs queue.CapGroups.
	Group string
	// Flow, when set, enqueues the jobs as one flow in which most jobs
	// depend on earlier ones (chains and fan-ins): every dependent must
	// run once its parents completed, with their results, and exactly
	// once unless it was in flight at the kill. It needs queue.CapFlows.
	Flow bool
}

// CrashWorkerMain turns the test binary into a crash-test worker when it
// was started as one by Crash, and otherwise returns at once. Call it first
// thing in TestMain, before m.Run:
//
//	func TestMain(m *testing.M) {
//		queuetest.CrashWorkerMain(openDSN)
//		goleak.VerifyTestMain(m)
//	}
//
// The worker runs jobs until SIGTERM (then it stops gracefully and exits
// 0) or SIGKILL. Each handler appends "start <job id>" to the run log
// before it works, so the test can count how often each job ran.
func CrashWorkerMain(open OpenFunc) {
	if os.Getenv(crashEnv) != "1" {
		return
	}
	run := crashWorker
	if os.Getenv(crashMode) == "schedule" {
		run = crashScheduler // schedules_crash.go
	}
	if err := run(open); err != nil {
		fmt.Fprintln(os.Stderr, "crash worker:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

func crashWorker(open OpenFunc) error {
	b, closeFn, err := open(os.Getenv(crashDSN))
	if err != nil {
		return err
	}
	defer closeFn()
	log, err := os.OpenFile(os.Getenv(crashRunLog), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	w := queue.NewWorker(b, crashWorkerConfig(os.Getenv(crashRole)))
	hold, _ := strconv.ParseInt(os.Getenv(crashHold), 10, 64)
	var started atomic.Int64
	w.Handle(crashKind, queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		// One write(2) on an O_APPEND file: lines from concurrent
		// handlers never interleave, and the kernel keeps the line even
		// if this process is killed right after.
		if _, err := fmt.Fprintf(log, "start %s %d\n", j.ID, os.Getpid()); err != nil {
			return nil, err
		}
		if err := checkParents(j); err != nil {
			return nil, queue.Permanent(err)
		}
		if hold > 0 && started.Add(1) >= hold {
			// The first worker's jobs from its hold-th start on run until
			// the kill, which the test sends once hold jobs started: jobs
			// are in flight at the kill however the machine schedules.
			select {}
		}
		t := time.NewTimer(5 * time.Millisecond) // the work
		defer t.Stop()
		select {
		case <-t.C:
			return []byte("ok"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}))
	return w.Run(ctx)
}

// crashWorkerConfig is the configuration of a crash-test worker. The
// first worker, the one killed, leases for a second, so that its jobs come
// back soon after the kill, and rescues nothing: while it lives nobody
// rescues a lease of its, so a heartbeat delayed on a loaded machine
// cannot make a live job run twice. The second worker rescues the first's
// jobs once their leases ran out, and leases its own for longer than any
// delay.
func crashWorkerConfig(role string) queue.WorkerConfig {
	cfg := queue.WorkerConfig{
		Queues: []string{"crash"}, Concurrency: 8, LeaseFor: time.Second,
		RescueEvery: time.Hour, PollInterval: 10 * time.Millisecond, Logger: quiet,
	}
	if role == "second" {
		cfg.LeaseFor, cfg.RescueEvery = testutil.Patience, 100*time.Millisecond
	}
	return cfg
}

// Crash is the crash test: a worker process is killed with SIGKILL in the
// middle of its jobs, a second process finishes everything, and the only
// jobs that ran twice are those that were in flight at the kill.
func Crash(t *testing.T, cfg CrashConfig) {
	if runtime.GOOS == "windows" {
		t.Skip("the crash test needs SIGKILL and SIGTERM")
	}
	if cfg.Jobs <= 0 {
		cfg.Jobs = 300
	}
	b, closeFn, err := cfg.Open(cfg.DSN)
	if err != nil {
		t.Fatalf("open %s: %v", cfg.DSN, err)
	}
	t.Cleanup(func() { _ = closeFn() })
	if cfg.Group != "" {
		SkipUnless(t, b, queue.CapGroups)
		g := queue.GroupSpec{ID: cfg.Group, CompletionKind: "crash-report", CompletionQueue: "crash-reports"}
		if _, err := queue.NewClient(b).CreateGroup(context.Background(), g); err != nil {
			t.Fatalf("CreateGroup: %v", err)
		}
	}
	var ids []string
	if cfg.Flow {
		SkipUnless(t, b, queue.CapFlows)
		ids = enqueueCrashFlow(t, b, cfg.Jobs, cfg.Group)
	} else {
		ids = enqueueCrashJobs(t, b, cfg.Jobs, cfg.Group)
	}
	runLog := t.TempDir() + "/runs.log"

	killAt := cfg.Jobs / 4
	if cfg.Flow {
		killAt = cfg.Jobs / 2 // past the roots: the kill lands among dependents
	}
	first := startCrashWorker(t, cfg.DSN, runLog, "first", crashHold+"="+strconv.Itoa(killAt))
	testutil.Eventually(t, "the first worker to start its share of the jobs", func() bool {
		return len(readRunLog(t, runLog)) >= killAt
	})
	if err := first.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatalf("kill: %v", err)
	}
	_ = first.cmd.Wait()
	inFlight := activeJobs(t, b)
	startedBefore := len(readRunLog(t, runLog))
	t.Logf("killed the first worker after %d starts; %d jobs active at the kill", startedBefore, len(inFlight))
	if len(inFlight) == 0 {
		t.Fatal("no job was in flight at the kill: the test proved nothing")
	}

	second := startCrashWorker(t, cfg.DSN, runLog, "second")
	defer func() {
		if t.Failed() {
			logUnfinished(t, b)
		}
	}()
	testutil.Eventually(t, "the second worker to finish every job", func() bool {
		st, err := b.Stats(context.Background())
		return err == nil && count(st, "crash", queue.StateCompleted) == int64(cfg.Jobs)
	})
	_ = second.cmd.Process.Signal(syscall.SIGTERM)
	if err := second.cmd.Wait(); err != nil {
		t.Errorf("second worker exited with %v after SIGTERM; output:\n%s", err, second.out.String())
	}
	checkCrashRuns(t, b, ids, inFlight, readRunLog(t, runLog))
	if cfg.Flow {
		checkCrashFlow(t, b, ids)
	}
	if cfg.Group != "" {
		checkCrashGroup(t, b, cfg.Group, cfg.Jobs)
	}
}

// checkCrashGroup checks that the group of the crash jobs is done, with
// every job completed and one completion job.
func checkCrashGroup(t *testing.T, b backend.Backend, id string, n int) {
	t.Helper()
	p, err := queue.NewClient(b).Group(context.Background(), id)
	if err != nil || !p.Done || p.Completed != int64(n) || p.Total() != int64(n) || p.CompletionJobID == "" {
		t.Fatalf("group %s = %+v, %v; want done with %d completed and a completion job", id, p, err, n)
	}
	page, err := b.List(context.Background(), queue.ListFilter{Queue: "crash-reports"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Jobs) != 1 || page.Jobs[0].ID != p.CompletionJobID {
		t.Fatalf("completion queue holds %d jobs, want exactly the completion job %s", len(page.Jobs), p.CompletionJobID)
	}
}

func enqueueCrashJobs(t *testing.T, b backend.Backend, n int, group string) []string {
	t.Helper()
	specs := make([]queue.JobSpec, n)
	for i := range specs {
		specs[i] = queue.JobSpec{Queue: "crash", Kind: crashKind, Payload: []byte(strconv.Itoa(i)), Group: group}
	}
	res, err := queue.NewClient(b).EnqueueBatch(context.Background(), specs)
	if err != nil {
		t.Fatalf("EnqueueBatch: %v", err)
	}
	ids := make([]string, n)
	for i, r := range res {
		ids[i] = r.Job.ID
	}
	return ids
}

type crashProc struct {
	cmd *exec.Cmd
	out *bytes.Buffer
}

func startCrashWorker(t *testing.T, dsn, runLog, role string, env ...string) crashProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"=1", crashDSN+"="+dsn, crashRunLog+"="+runLog, crashRole+"="+role)
	cmd.Env = append(cmd.Env, env...)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start worker process: %v", err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return crashProc{cmd: cmd, out: out}
}

// readRunLog returns the job id of every "start" line, in order.
func readRunLog(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "start" {
			out = append(out, f[1])
		}
	}
	return out
}

func activeJobs(t *testing.T, b backend.Backend) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	f := queue.ListFilter{Queue: "crash", States: []queue.State{queue.StateActive}, Limit: queue.MaxListLimit}
	for {
		p, err := b.List(context.Background(), f)
		if err != nil {
			t.Fatalf("List(active): %v", err)
		}
		for _, j := range p.Jobs {
			out[j.ID] = true
		}
		if p.Next == "" {
			return out
		}
		f.Cursor = p.Next
	}
}

func checkCrashRuns(t *testing.T, b backend.Backend, ids []string, inFlight map[string]bool, runs []string) {
	t.Helper()
	starts := map[string]int{}
	for _, id := range runs {
		starts[id]++
	}
	twice, rescued := 0, 0
	for _, id := range ids {
		n := starts[id]
		switch {
		case n == 0:
			t.Errorf("job %s never ran", id)
		case n > 1 && !inFlight[id]:
			t.Errorf("job %s ran %d times but was not in flight at the kill", id, n)
		case n > 2:
			t.Errorf("job %s ran %d times, want at most 2", id, n)
		case n == 2:
			twice++
		}
		j, err := b.Get(context.Background(), id)
		if err != nil || j.State != queue.StateCompleted {
			t.Errorf("job %s: %v, %v; want completed", id, j, err)
		} else if err := crashStalls(inFlight[id], n, j.Stalls); err != nil {
			t.Errorf("job %s: %v", id, err)
		} else if j.Stalls > 0 {
			rescued++
		}
	}
	t.Logf("%d jobs, %d in flight at the kill, %d ran twice, %d rescued", len(ids), len(inFlight), twice, rescued)
	if rescued == 0 {
		t.Errorf("no job was rescued after the kill: the rescue went unproven")
	}
}

// crashStalls checks a completed job's stall count against how often it
// started (n) and whether it was active when the killed worker was gone.
//
// A killed process's last commands can reach the store after it died — a
// lease whose reply it never read, an outcome it sent as it was killed —
// so being active after the kill neither implies nor excludes a rescue on
// its own. What must hold is: a job that ran twice was rescued exactly
// once, and no job was rescued twice.
func crashStalls(inFlight bool, n, stalls int) error {
	switch {
	case n == 2 && stalls != 1:
		return fmt.Errorf("ran twice (in flight at the kill: %v) but has %d stalls, want 1", inFlight, stalls)
	case stalls > 1:
		return fmt.Errorf("has %d stalls after one kill, want at most 1", stalls)
	}
	return nil
}
