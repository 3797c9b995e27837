package redisqueue_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// The crash test runs workers as separate processes: the test binary
// started again with crashHelperEnv set runs crashHelperMain instead of the
// tests.
const (
	crashHelperEnv = "SLUICE_REDISQUEUE_CRASH_HELPER" // "first" or "second"
	crashURLEnv    = "SLUICE_REDISQUEUE_CRASH_URL"
	crashPrefixEnv = "SLUICE_REDISQUEUE_CRASH_PREFIX"
	crashLogEnv    = "SLUICE_REDISQUEUE_CRASH_LOG"
	crashJobs      = 300
	crashQueue     = "crash"
)

// TestCrash kills a worker process with SIGKILL while it runs jobs, then
// lets a second process finish. Every job must end completed; the only
// jobs that ran twice are jobs that were active (leased, not finished) at
// the kill, and those are the ones the second process rescued. It runs on
// a miniredis served over TCP to both processes, and on real Redis when
// SLUICE_REDIS_URL is set.
func TestCrash(t *testing.T) {
	t.Run("miniredis", func(t *testing.T) {
		m := miniredis.RunT(t)
		testCrash(t, "redis://"+m.Addr(), randomPrefix(), &redis.Options{Addr: m.Addr()})
	})
	t.Run("redis", func(t *testing.T) {
		s := realServer(t)
		testCrash(t, os.Getenv("SLUICE_REDIS_URL"), s.prefix, s.opts)
	})
}

func testCrash(t *testing.T, url string, prefix keyspace.Prefix, opts *redis.Options) {
	ctx := context.Background()
	c := redis.NewClient(opts)
	defer c.Close()
	b, err := redisqueue.New(c, redisqueue.Options{Prefix: prefix, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cl := queue.NewClient(b)
	specs := make([]queue.JobSpec, crashJobs)
	for i := range specs {
		specs[i] = queue.JobSpec{Queue: crashQueue, Kind: "work"}
	}
	if _, err := cl.EnqueueBatch(ctx, specs); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(t.TempDir(), "runs.log")

	first := startHelper(t, "first", url, prefix, journal)
	waitStarts(t, journal, crashJobs/3)
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	p, err := cl.List(ctx, queue.ListFilter{Queue: crashQueue, States: []queue.State{queue.StateActive}, Limit: queue.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	inFlight := map[string]bool{}
	for _, j := range p.Jobs {
		inFlight[j.ID] = true
	}

	second := startHelper(t, "second", url, prefix, journal)
	done := make(chan error, 1)
	go func() { done <- second.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("second worker: %v", err)
		}
	case <-time.After(2 * time.Minute):
		_ = second.Process.Kill()
		<-done
		t.Fatal("second worker did not finish the jobs within 2 minutes")
	}
	checkCrash(t, cl, readJournal(t, journal), inFlight)
}

// checkCrash checks the outcome: all completed; twice-run jobs were in
// flight at the kill and rescued once; every other job ran once.
func checkCrash(t *testing.T, cl *queue.Client, starts map[string][]string, inFlight map[string]bool) {
	t.Helper()
	p, err := cl.List(context.Background(), queue.ListFilter{Queue: crashQueue, Limit: queue.MaxListLimit})
	if err != nil || len(p.Jobs) != crashJobs {
		t.Fatalf("List = %d jobs, %v; want %d", len(p.Jobs), err, crashJobs)
	}
	twice := 0
	for _, j := range p.Jobs {
		runs := starts[j.ID]
		switch {
		case j.State != queue.StateCompleted:
			t.Errorf("job %s is %s, want completed", j.ID, j.State)
		case len(runs) == 0 || len(runs) > 2:
			t.Errorf("job %s ran %d times (%v)", j.ID, len(runs), runs)
		case len(runs) == 2 && !(inFlight[j.ID] && runs[0] == "first" && runs[1] == "second" && j.Stalls == 1):
			t.Errorf("job %s ran twice (%v, stalls %d) but was not in flight at the kill", j.ID, runs, j.Stalls)
		case len(runs) == 1 && j.Stalls != 0 && !inFlight[j.ID]:
			t.Errorf("job %s stalled %d times but was not in flight", j.ID, j.Stalls)
		}
		if len(runs) == 2 {
			twice++
		}
	}
	// The first worker ran jobs concurrently up to the kill: some were
	// mid-handler, so the rescue path was exercised.
	if twice == 0 {
		t.Errorf("no job ran twice: the kill did not interrupt a job (%d in flight)", len(inFlight))
	}
	t.Logf("%d jobs in flight at the kill, %d of them ran twice", len(inFlight), twice)
}

func startHelper(t *testing.T, role, url string, prefix keyspace.Prefix, journal string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashHelperEnv+"="+role, crashURLEnv+"="+url,
		crashPrefixEnv+"="+string(prefix), crashLogEnv+"="+journal)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // no-op once it exited
	return cmd
}

// waitStarts waits until the journal holds at least n job starts.
func waitStarts(t *testing.T, journal string, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		b, _ := os.ReadFile(journal)
		if strings.Count(string(b), "\n") >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first worker started %d jobs in a minute, want %d", strings.Count(string(b), "\n"), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// readJournal returns, per job id, the roles of the processes that started
// it, in order.
func readJournal(t *testing.T, journal string) map[string][]string {
	t.Helper()
	f, err := os.Open(journal)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		role, id, ok := strings.Cut(sc.Text(), " ")
		if ok {
			out[id] = append(out[id], role)
		}
	}
	return out
}

// crashHelperMain is a worker process. It journals each job start with
// one append, so the lines survive SIGKILL. The first process runs until
// it is killed (or a minute passes); the second until every job is done.
func crashHelperMain() int {
	role := os.Getenv(crashHelperEnv)
	opts, err := redis.ParseURL(os.Getenv(crashURLEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	c := redis.NewClient(opts)
	defer c.Close()
	b, err := redisqueue.New(c, redisqueue.Options{Prefix: keyspace.Prefix(os.Getenv(crashPrefixEnv)), Logger: quiet})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer b.Close()
	journal, err := os.OpenFile(os.Getenv(crashLogEnv), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer journal.Close()
	w := queue.NewWorker(b, queue.WorkerConfig{
		Queues: []string{crashQueue}, Concurrency: 8, LeaseFor: time.Second,
		PollInterval: 20 * time.Millisecond, Logger: quiet, ID: role + "-" + strconv.Itoa(os.Getpid()),
	})
	w.Handle("work", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		if _, err := journal.WriteString(role + " " + j.ID + "\n"); err != nil {
			return nil, err
		}
		time.Sleep(20 * time.Millisecond) // the work a kill interrupts
		return nil, nil
	}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if role == "second" {
		go func() {
			waitAllDone(ctx, queue.NewClient(b))
			cancel()
		}()
	}
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func waitAllDone(ctx context.Context, cl *queue.Client) {
	for ctx.Err() == nil {
		st, err := cl.Stats(ctx)
		if err == nil && len(st) == 1 && st[0].Counts[queue.StateCompleted] == crashJobs {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
