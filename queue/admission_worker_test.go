package queue_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
)

type transition struct {
	over bool
	why  string
}

// pauseHarness runs a worker on a fake clock with a switchable monitor.
// Its handler reports each start and holds the job until released.
type pauseHarness struct {
	t       *testing.T
	b       *spyBackend
	clk     *clock.Fake
	load    *fakeLoad
	w       *queue.Worker
	trans   chan transition
	started chan string
	release chan struct{}
	logs    *testutil.Buffer
}

const pausePoll = time.Second

func newPauseHarness(t *testing.T) *pauseHarness {
	h := &pauseHarness{
		t: t, b: openSQLite(t), clk: clock.NewFake(time.Now()), load: &fakeLoad{},
		trans: make(chan transition, 8), started: make(chan string, 8), release: make(chan struct{}), logs: &testutil.Buffer{},
	}
	h.b.extended, h.b.completed = make(chan string, 8), make(chan string, 8)
	h.w = queue.NewWorker(h.b, queue.WorkerConfig{
		Queues: []string{"w"}, Concurrency: 2, PollInterval: pausePoll, HeartbeatEvery: 10 * time.Second,
		RescueEvery: time.Hour, CleanupEvery: -1, Clock: h.clk, Monitor: h.load,
		OnOverload: func(over bool, why string) { h.trans <- transition{over, why} },
		Logger:     slog.New(slog.NewTextHandler(h.logs, nil)),
	})
	h.w.Handle("k", queue.HandlerFunc(func(ctx context.Context, job *queue.Job) ([]byte, error) {
		h.started <- job.ID
		select {
		case <-h.release:
		case <-ctx.Done():
		}
		return nil, nil
	}))
	return h
}

func (h *pauseHarness) enqueue() string {
	j, err := queue.NewClient(h.b).Enqueue(context.Background(), queue.JobSpec{Queue: "w", Kind: "k"})
	if err != nil {
		h.t.Fatal(err)
	}
	return j.ID
}

// round lets the lease loop (idle on its poll timer, with timers pending
// in all) run one more round and waits until it is idle again.
func (h *pauseHarness) round(timers int) {
	h.clk.BlockUntil(timers)
	h.clk.Advance(pausePoll)
	h.clk.BlockUntil(timers) // the poll timer fired: this one is the next round's
}

func (h *pauseHarness) wantState(id string, want queue.State) {
	h.t.Helper()
	j, err := h.b.Get(context.Background(), id)
	if err != nil || j.State != want {
		h.t.Fatalf("job %s: %v %v, want %s", id, j, err, want)
	}
}

func (h *pauseHarness) wantTransition(over bool, why string) {
	h.t.Helper()
	if got := <-h.trans; got != (transition{over, why}) {
		h.t.Fatalf("transition %+v, want %v %q", got, over, why)
	}
	if o, w := h.w.Overloaded(); o != over || w != why {
		h.t.Fatalf("Worker.Overloaded() = %v %q, want %v %q", o, w, over, why)
	}
}

func TestWorkerStopsLeasingWhileOverloaded(t *testing.T) {
	t.Parallel()
	h := newPauseHarness(t)
	h.load.set(true, "cpu 95% (threshold 80%)")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.w.Run(ctx) }()

	// Overloaded from the start: a job waits.
	h.wantTransition(true, "cpu 95% (threshold 80%)")
	first := h.enqueue()
	h.round(2) // timers: rescue, poll
	h.round(2)
	h.wantState(first, queue.StatePending)

	// Load falls: the job starts.
	h.load.set(false, "")
	h.round(2)
	h.wantTransition(false, "")
	if got := <-h.started; got != first {
		t.Fatalf("started %s, want %s", got, first)
	}

	// Overloaded again while it runs: it goes on and keeps its lease, a
	// new job waits.
	h.load.set(true, "memory 91% (threshold 80%)")
	second := h.enqueue()
	h.round(3) // timers: rescue, heartbeat, poll
	h.wantTransition(true, "memory 91% (threshold 80%)")
	h.round(3)
	h.wantState(second, queue.StatePending)
	h.clk.Advance(10 * time.Second)
	if got := <-h.b.extended; got != first {
		t.Fatalf("heartbeat for %s, want %s", got, first)
	}
	h.release <- struct{}{}
	if got := <-h.b.completed; got != first {
		t.Fatalf("completed %s, want %s", got, first)
	}
	h.round(2)
	h.wantState(second, queue.StatePending)

	// Load falls again: the waiting job starts.
	h.load.set(false, "")
	h.round(2)
	h.wantTransition(false, "")
	if got := <-h.started; got != second {
		t.Fatalf("started %s, want %s", got, second)
	}
	h.release <- struct{}{}
	<-h.b.completed
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	logs := h.logs.String()
	for msg, want := range map[string]int{"queue: overloaded; not leasing new jobs": 2, "queue: load fell; leasing again": 2} {
		if got := strings.Count(logs, msg); got != want {
			t.Errorf("%q logged %d times, want %d:\n%s", msg, got, want, logs)
		}
	}
	if len(h.trans) != 0 {
		t.Errorf("%d more transitions reported", len(h.trans))
	}
}

func TestWorkerWithoutMonitorIsNeverOverloaded(t *testing.T) {
	t.Parallel()
	w := queue.NewWorker(openSQLite(t), queue.WorkerConfig{})
	if over, why := w.Overloaded(); over || why != "" {
		t.Errorf("got %v %q", over, why)
	}
}
