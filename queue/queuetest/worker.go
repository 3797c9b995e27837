package queuetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// quiet is a logger that drops everything, for workers under test.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// workerConfig is a worker on the real clock that polls often, so tests
// wait on conditions rather than intervals. The backend keeps its fake
// clock: leases never expire unless a test moves that clock.
func workerConfig(queues ...string) queue.WorkerConfig {
	return queue.WorkerConfig{
		Queues: queues, Concurrency: 4, PollInterval: 2 * time.Millisecond,
		LeaseFor: 90 * time.Millisecond, Backoff: func(int, error) time.Duration { return 0 },
		Logger: quiet,
	}
}

// waitState waits until the job is in state want (testutil.Eventually).
func (h *Harness) waitState(t *testing.T, id string, want queue.State) *queue.Job {
	t.Helper()
	var j *queue.Job
	testutil.Eventually(t, "job "+id+" to be "+string(want), func() error {
		if j = h.get(t, id); j.State != want {
			return fmt.Errorf("state %s, last error %q", j.State, j.LastError)
		}
		return nil
	})
	return j
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func testWorker(t *testing.T, f Factory) {
	runTests(t, f, []test{
		{"CompleteAndRetry", nil, testWorkerRetry},
		{"PermanentPanicUnknown", nil, testWorkerFailures},
		{"Snooze", nil, testWorkerSnooze},
		{"CancelRunning", nil, testWorkerCancel},
		{"LeaseLost", nil, testWorkerLeaseLost},
		{"ExtendLease", nil, testWorkerExtend},
		{"Timeout", nil, testWorkerTimeout},
		{"ShutdownRequeues", nil, testWorkerShutdown},
		{"ShutdownWaits", nil, testWorkerShutdownWaits},
		{"RescuesOthers", nil, testWorkerRescue},
		{"RunErrors", nil, testWorkerRunErrors},
	})
}

func testWorkerRetry(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	var attempts []int
	var mu sync.Mutex
	cfg := workerConfig(QueueQ)
	cfg.Backoff = func(attempt int, err error) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, attempt)
		return 0
	}
	w := queue.NewWorker(h.Backend, cfg)
	w.Handle("k", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		if j.Attempt < 3 {
			return nil, errors.New("flaky " + string(j.Payload))
		}
		return append([]byte("done "), j.Payload...), nil
	}))
	j := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Payload: []byte("x")})
	testutil.Start(t, w)
	got := h.waitState(t, j.ID, queue.StateCompleted)
	if string(got.Result) != "done x" || got.Attempt != 3 || len(got.Errors) != 2 || got.Errors[1].Error != "flaky x" {
		t.Fatalf("job = result %q attempt %d errors %+v", got.Result, got.Attempt, got.Errors)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(attempts) != 2 || attempts[0] != 1 || attempts[1] != 2 {
		t.Fatalf("Backoff called with attempts %v, want [1 2]", attempts)
	}
}

func testWorkerFailures(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	w := queue.NewWorker(h.Backend, workerConfig(QueueQ))
	w.Handle("perm", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		return nil, queue.Permanent(errors.New("bad payload"))
	}))
	w.Handle("panic", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		panic("kaboom")
	}))
	perm := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "perm", MaxAttempts: 5})
	pan := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "panic", MaxAttempts: 2})
	unknown := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "nobody", MaxAttempts: 1})
	testutil.Start(t, w)
	if got := h.waitState(t, perm.ID, queue.StateFailed); got.Attempt != 1 || got.LastError != "bad payload" {
		t.Errorf("permanent: attempt %d, LastError %q; want 1, bad payload", got.Attempt, got.LastError)
	}
	got := h.waitState(t, pan.ID, queue.StateFailed)
	if got.Attempt != 2 || !strings.Contains(got.LastError, "panicked: kaboom") || !strings.Contains(got.LastError, "goroutine") {
		t.Errorf("panic: attempt %d, LastError %q; want 2 attempts and the stack", got.Attempt, got.LastError)
	}
	if got := h.waitState(t, unknown.ID, queue.StateFailed); !strings.Contains(got.LastError, `no handler for kind "nobody"`) {
		t.Errorf("unknown kind: LastError %q", got.LastError)
	}
}

func testWorkerSnooze(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	w := queue.NewWorker(h.Backend, workerConfig(QueueQ))
	w.Handle("k", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		if j.Stalls == 0 && len(j.Errors) == 0 && j.StartedAt.Equal(h.Clock.Now()) && j.Attempt == 1 && string(j.Payload) == "first" {
			return nil, queue.Snooze(time.Hour)
		}
		return nil, nil
	}))
	j := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Payload: []byte("first")})
	testutil.Start(t, w)
	got := h.waitState(t, j.ID, queue.StateScheduled)
	if got.Attempt != 0 || !sameTime(got.RunAt, Epoch.Add(time.Hour)) {
		t.Fatalf("snoozed: attempt %d RunAt %v; want 0, +1h", got.Attempt, got.RunAt)
	}
}

func testWorkerCancel(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	started, cause := make(chan struct{}), make(chan error, 1)
	w := queue.NewWorker(h.Backend, workerConfig(QueueQ))
	w.Handle("k", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return nil, ctx.Err()
	}))
	j := h.enqueue(t, spec(QueueQ, "k"))
	testutil.Start(t, w)
	recv(t, started, "handler start")
	if _, err := h.Client.Cancel(context.Background(), j.ID); err != nil {
		t.Fatal(err)
	}
	if c := recv(t, cause, "handler cancellation"); !errors.Is(c, queue.ErrJobCancelled) {
		t.Fatalf("handler context cause = %v, want ErrJobCancelled", c)
	}
	h.waitState(t, j.ID, queue.StateCancelled)
}

func testWorkerLeaseLost(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	started, cause := make(chan struct{}, 2), make(chan error, 2)
	// A lease ten times the suite's usual one beats every 300 ms of real
	// time, so on a busy machine a heartbeat rarely lands between the test
	// moving the clock and rescuing, yet lease loss is still seen at once.
	cfg := workerConfig(QueueQ)
	cfg.LeaseFor = 900 * time.Millisecond
	// The test is the rescuer: the worker's own (every LeaseFor/2 of real
	// time) could requeue the job first, and its second run end before
	// the test's rescue looks.
	cfg.RescueEvery = time.Hour
	w := queue.NewWorker(h.Backend, cfg)
	w.Handle("k", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		started <- struct{}{}
		if j.Stalls > 0 {
			return []byte("second"), nil
		}
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return []byte("first"), nil // must not be recorded: the lease is gone
	}))
	j := h.enqueue(t, spec(QueueQ, "k"))
	testutil.Start(t, w)
	recv(t, started, "first start")
	// The lease expires in backend time and another worker rescues it. The
	// worker's heartbeat runs on the real clock and may renew the lease
	// between the two steps, so move time on until the rescue wins.
	for try := 1; ; try++ {
		h.Clock.Advance(time.Hour)
		r, err := h.Backend.RescueExpired(context.Background(), backend.RescueRequest{})
		if err != nil || r.Requeued > 1 {
			t.Fatalf("RescueExpired = %+v, %v", r, err)
		}
		if r.Requeued == 1 {
			break
		}
		if try == 100 {
			t.Fatal("RescueExpired never found the expired lease")
		}
	}
	if c := recv(t, cause, "lease loss"); !errors.Is(c, queue.ErrLeaseLost) {
		t.Fatalf("handler context cause = %v, want ErrLeaseLost", c)
	}
	got := h.waitState(t, j.ID, queue.StateCompleted)
	if string(got.Result) != "second" {
		t.Fatalf("result = %q, want the second run's", got.Result)
	}
}

func testWorkerExtend(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	if err := queue.ExtendLease(context.Background(), time.Minute); err == nil {
		t.Fatal("ExtendLease outside a handler: no error")
	}
	until := make(chan time.Time, 1)
	cfg := workerConfig(QueueQ)
	// No heartbeat while the handler runs: it renews for LeaseFor and could
	// land between ExtendLease and the read that checks it.
	cfg.HeartbeatEvery = time.Hour
	w := queue.NewWorker(h.Backend, cfg)
	w.Handle("k", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		if err := queue.ExtendLease(ctx, 10*time.Minute); err != nil {
			return nil, err
		}
		cur, err := h.Backend.Get(ctx, j.ID)
		if err != nil {
			return nil, err
		}
		until <- cur.LeaseUntil
		return nil, nil
	}))
	j := h.enqueue(t, spec(QueueQ, "k"))
	testutil.Start(t, w)
	if got := recv(t, until, "extended lease"); !sameTime(got, Epoch.Add(10*time.Minute)) {
		t.Fatalf("LeaseUntil after ExtendLease(10m) = %v, want %v", got, Epoch.Add(10*time.Minute))
	}
	h.waitState(t, j.ID, queue.StateCompleted)
}

func testWorkerTimeout(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	cause := make(chan error, 1)
	w := queue.NewWorker(h.Backend, workerConfig(QueueQ))
	w.Handle("k", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return nil, ctx.Err()
	}))
	j := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Timeout: 5 * time.Millisecond, MaxAttempts: 1})
	testutil.Start(t, w)
	if c := recv(t, cause, "timeout"); !errors.Is(c, queue.ErrJobTimeout) {
		t.Fatalf("cause = %v, want ErrJobTimeout", c)
	}
	if got := h.waitState(t, j.ID, queue.StateFailed); !strings.Contains(got.LastError, "timed out") {
		t.Fatalf("LastError = %q, want it to say the job timed out", got.LastError)
	}
}

func testWorkerShutdown(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	const n = 3
	started, causes := make(chan string, n), make(chan error, n)
	cfg := workerConfig(QueueQ)
	cfg.ShutdownTimeout = 5 * time.Millisecond
	w := queue.NewWorker(h.Backend, cfg)
	w.Handle("k", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		started <- j.ID
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	}))
	for i := 0; i < n; i++ {
		h.enqueue(t, spec(QueueQ, "k"))
	}
	stop := testutil.Start(t, w)
	var running []string
	for i := 0; i < n; i++ {
		running = append(running, recv(t, started, "job start"))
	}
	stop()
	for i := 0; i < n; i++ {
		if c := recv(t, causes, "handler cancellation"); !errors.Is(c, queue.ErrWorkerStopped) {
			t.Errorf("cause = %v, want ErrWorkerStopped", c)
		}
	}
	for _, id := range running {
		got := h.get(t, id)
		if got.State != queue.StatePending || got.Attempt != 0 || len(got.Errors) != 0 || !got.LeaseUntil.IsZero() {
			t.Errorf("job %s after shutdown: state %s attempt %d errors %d lease %v; want pending, 0, 0, none",
				id, got.State, got.Attempt, len(got.Errors), got.LeaseUntil)
		}
	}
}

func testWorkerShutdownWaits(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	started, release := make(chan struct{}), make(chan struct{})
	cfg := workerConfig(QueueQ)
	cfg.ShutdownTimeout = time.Minute
	w := queue.NewWorker(h.Backend, cfg)
	w.Handle("k", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		close(started)
		<-release
		return []byte("finished"), ctx.Err()
	}))
	j := h.enqueue(t, spec(QueueQ, "k"))
	stop := testutil.Start(t, w)
	recv(t, started, "start")
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	close(release)
	recv(t, stopped, "Run to return")
	if got := h.wantState(t, j.ID, queue.StateCompleted); string(got.Result) != "finished" {
		t.Fatalf("result = %q", got.Result)
	}
}

func testWorkerRescue(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	j := h.enqueue(t, spec(QueueQ, "k"))
	h.leaseOne(t, QueueQ) // a worker that then dies
	h.Clock.Advance(testLease + time.Second)
	w := queue.NewWorker(h.Backend, workerConfig(QueueQ))
	w.Handle("k", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) { return nil, nil }))
	testutil.Start(t, w)
	if got := h.waitState(t, j.ID, queue.StateCompleted); got.Stalls != 1 || got.Attempt != 1 {
		t.Fatalf("rescued job: stalls %d attempt %d; want 1, 1", got.Stalls, got.Attempt)
	}
}

func testWorkerRunErrors(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	w := queue.NewWorker(h.Backend, workerConfig(QueueQ))
	if err := w.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "no handlers") {
		t.Fatalf("Run without handlers = %v", err)
	}
	started := make(chan struct{})
	w.Handle("k", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) { close(started); return nil, nil }))
	h.enqueue(t, spec(QueueQ, "k"))
	testutil.Start(t, w)
	recv(t, started, "the first Run to start")
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Run(done); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second Run = %v, want already running", err)
	}
}
