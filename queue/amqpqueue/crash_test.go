package amqpqueue

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
)

// The crash test re-runs the test binary as a worker process (helperMain)
// and kills it with SIGKILL while it holds jobs.
const (
	helperEnv      = "SLUICE_AMQP_CRASH_WORKER"
	helperPrefix   = "SLUICE_AMQP_CRASH_PREFIX"
	helperComplete = "SLUICE_AMQP_CRASH_COMPLETE"
	crashQueue     = "crash"
	crashPrefetch  = 8
	crashSlots     = 4
)

// helperMain is the worker process: it completes the first jobs it starts
// (as many as helperComplete says), then blocks in every handler, printing
// "start <id>" as each job starts.
func helperMain() int {
	n, _ := strconv.Atoi(os.Getenv(helperComplete))
	b, err := New(os.Getenv(urlEnv), Options{
		Prefix: os.Getenv(helperPrefix), Prefetch: crashPrefetch, Logger: quiet,
		ConnectionName: "sluice-test crash worker", Scheduler: helperScheduler(), // scheduled_crash_test.go
	})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	var mu sync.Mutex
	started := 0
	w := queue.NewWorker(b, queue.WorkerConfig{
		Queues: []string{crashQueue}, Concurrency: crashSlots, Logger: quiet, PollInterval: 10 * time.Millisecond,
		LeaseFor: helperLease(),
	})
	w.Handle("k", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		mu.Lock()
		started++
		block := started > n
		fmt.Println("start", j.ID)
		mu.Unlock()
		if block {
			select {} // until SIGKILL
		}
		return nil, nil
	}))
	_ = w.Run(context.Background())
	return 0
}

// startHelper runs the worker process and returns the lines it prints.
func startHelper(t *testing.T, prefix string, complete int) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", helperPrefix+"="+prefix, helperComplete+"="+strconv.Itoa(complete))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, lines
}

// TestCrashRedelivers kills a worker process holding jobs: its unacked
// jobs are redelivered to the next worker; the only jobs that run twice
// are those it was running when killed; no job is lost.
func TestCrashRedelivers(t *testing.T) {
	const n, complete = 40, 10
	b := open(t, Options{Prefetch: crashPrefetch})
	ids := map[string]bool{}
	for i := 0; i < n; i++ {
		j, err := queue.NewClient(b).Enqueue(bg(), queue.JobSpec{Queue: crashQueue, Kind: "k", Payload: []byte(strconv.Itoa(i))})
		if err != nil {
			t.Fatal(err)
		}
		ids[j.ID] = true
	}
	cmd, lines := startHelper(t, b.opts.Prefix, complete)
	var first []string // jobs the first process started, in order
	for len(first) < complete+crashSlots {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("worker process ended after %d starts", len(first))
			}
			id, found := strings.CutPrefix(l, "start ")
			if !found {
				t.Fatalf("worker process: %s", l)
			}
			first = append(first, id)
		case <-time.After(20 * time.Second):
			t.Fatalf("worker process started %d jobs, want %d", len(first), complete+crashSlots)
		}
	}
	// Kill only once the broker has taken the acks of the completed jobs
	// and refilled the process's prefetch: then exactly the blocked jobs
	// are in flight, and the rest of its prefetch is merely buffered.
	wantReady := n - complete - crashPrefetch
	testutil.Eventually(t, fmt.Sprintf("%d ready messages", wantReady), func() error {
		if r, err := b.topo.inspect(bg(), b.mainName(crashQueue)); err != nil || r != wantReady {
			return fmt.Errorf("%d ready, %v", r, err)
		}
		return nil
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	var mu sync.Mutex
	second := map[string]*queue.Job{}
	w := queue.NewWorker(b, queue.WorkerConfig{Queues: []string{crashQueue}, Concurrency: 8, Logger: quiet, PollInterval: 10 * time.Millisecond})
	w.Handle("k", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		if second[j.ID] != nil {
			t.Errorf("job %s ran twice in the second process", j.ID)
		}
		second[j.ID] = j
		return nil, nil
	}))
	stop := testutil.Start(t, w)
	testutil.Eventually(t, fmt.Sprintf("the second process to run %d jobs", n-complete), func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(second) < n-complete {
			return fmt.Errorf("it ran %d", len(second))
		}
		return nil
	})
	stop()

	done, blocked := first[:complete], first[complete:]
	t.Logf("killed process completed %d jobs and was running %d; the next process ran %d", len(done), len(blocked), len(second))
	for _, id := range done {
		if second[id] != nil {
			t.Errorf("job %s completed by the killed process ran again", id)
		}
		delete(ids, id)
	}
	for _, id := range blocked {
		j := second[id]
		if j == nil {
			t.Errorf("job %s, running when the process was killed, was not redelivered", id)
			continue
		}
		if j.Attempt != 1 || j.Stalls != 1 {
			t.Errorf("redelivered job %s: attempt %d stalls %d, want 1, 1", id, j.Attempt, j.Stalls)
		}
	}
	for id := range ids {
		if second[id] == nil {
			t.Errorf("job %s was lost", id)
		}
		if got, err := b.Get(bg(), id); err != nil || got.State != queue.StateCompleted {
			t.Errorf("Get(%s) = %v, %v; want completed", id, got, err)
		}
	}
}
