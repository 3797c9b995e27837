package queue_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// gate is a handler whose jobs run until released, one release each.
type gate struct {
	mu      sync.Mutex
	running map[string]bool
	ran     []string
	most    int // the most handlers ever running at once
	release chan struct{}
}

func newGate() *gate { return &gate{running: map[string]bool{}, release: make(chan struct{})} }

func (g *gate) Work(ctx context.Context, j *queue.Job) ([]byte, error) {
	g.mu.Lock()
	g.running[j.ID] = true
	g.ran = append(g.ran, j.ID)
	g.most = max(g.most, len(g.running))
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.running, j.ID)
		g.mu.Unlock()
	}()
	select {
	case <-g.release:
		return nil, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// snapshot returns the jobs running now, every job that ever ran, and
// the most that ran at once.
func (g *gate) snapshot() (running, ran []string, most int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for id := range g.running {
		running = append(running, id)
	}
	return running, append([]string(nil), g.ran...), g.most
}

type prefetchRig struct {
	cl    *queue.Client
	clk   *clock.Fake
	g     *gate
	ids   []string
	stop  context.CancelFunc
	errc  chan error
	state func(id string) *queue.Job
}

// prefetchWorker enqueues n jobs, then runs a worker of concurrency conc
// and the given prefetch over them on a fake clock the store shares.
func prefetchWorker(t *testing.T, conc, prefetch, n int) *prefetchRig {
	t.Helper()
	return prefetchWorkerOn(t, conc, prefetch, n, nil)
}

// prefetchWorkerOn is prefetchWorker whose worker uses wrap(store) when
// wrap is not nil.
func prefetchWorkerOn(t *testing.T, conc, prefetch, n int, wrap func(backend.Backend) backend.Backend) *prefetchRig {
	t.Helper()
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	store, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlitequeue.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	r := &prefetchRig{cl: queue.NewClient(store), clk: clk, g: newGate(), errc: make(chan error, 1)}
	for range n {
		j, err := r.cl.Enqueue(context.Background(), queue.JobSpec{Queue: "q", Kind: "k"})
		if err != nil {
			t.Fatal(err)
		}
		r.ids = append(r.ids, j.ID)
	}
	r.state = func(id string) *queue.Job {
		j, err := r.cl.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	var b backend.Backend = store
	if wrap != nil {
		b = wrap(store)
	}
	w := queue.NewWorker(b, queue.WorkerConfig{
		Queues: []string{"q"}, Concurrency: conc, Prefetch: prefetch, LeaseFor: time.Minute,
		PollInterval: 24 * time.Hour, RescueEvery: 24 * time.Hour, CleanupEvery: -1,
		ShutdownTimeout: time.Hour, Clock: clk, Logger: slog.New(slog.DiscardHandler),
	})
	w.Handle("k", r.g)
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	go func() { r.errc <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		close(r.g.release)
		if err := <-r.errc; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return r
}

// beatsArmed waits until n heartbeat timers (every held job's) are set
// for one beat from now, so that advancing the clock by a beat fires them.
func (r *prefetchRig) beatsArmed(t *testing.T, n int) {
	t.Helper()
	at := r.clk.Now().Add(20 * time.Second)
	testutil.Eventually(t, "the heartbeats to be armed", func() bool {
		return len(slices.DeleteFunc(r.clk.Pending(), func(d time.Time) bool { return !d.Equal(at) })) >= n
	})
}

// count returns how many of the rig's jobs are in state s.
func (r *prefetchRig) count(s queue.State) int {
	n := 0
	for _, id := range r.ids {
		if r.state(id).State == s {
			n++
		}
	}
	return n
}

// awaitWaiting waits until n of the rig's jobs are held without running,
// and returns them.
func (r *prefetchRig) awaitWaiting(t *testing.T, n int) []string {
	t.Helper()
	var wait []string
	testutil.Eventually(t, fmt.Sprintf("%d jobs waiting for a slot", n), func() bool {
		wait = r.waiting()
		return len(wait) == n
	})
	return wait
}

// waiting returns the rig's active jobs whose handler has not started.
func (r *prefetchRig) waiting() []string {
	_, ran, _ := r.g.snapshot()
	var out []string
	for _, id := range r.ids {
		started := false
		for _, s := range ran {
			started = started || s == id
		}
		if !started && r.state(id).State == queue.StateActive {
			out = append(out, id)
		}
	}
	return out
}

// A worker with a Prefetch holds Concurrency+Prefetch jobs and runs
// Concurrency of them; the rest start as slots free, and the handlers
// never outnumber the slots.
func TestPrefetchHoldsJobsForSlots(t *testing.T) {
	r := prefetchWorker(t, 2, 3, 8)
	testutil.Eventually(t, "two running, five held", func() bool {
		running, _, _ := r.g.snapshot()
		return len(running) == 2 && r.count(queue.StateActive) == 5
	})
	if got := r.count(queue.StatePending); got != 3 {
		t.Fatalf("pending: got %d, want 3", got)
	}
	for range 8 {
		r.g.release <- struct{}{}
	}
	testutil.Eventually(t, "all eight to complete", func() bool { return r.count(queue.StateCompleted) == 8 })
	if _, ran, most := r.g.snapshot(); len(ran) != 8 || most != 2 {
		t.Fatalf("handlers: %d runs, at most %d at once; want 8 runs, at most 2", len(ran), most)
	}
}

// A job waiting for a slot keeps its lease: its heartbeats renew it as a
// running job's are.
func TestPrefetchRenewsWaitingLeases(t *testing.T) {
	r := prefetchWorker(t, 1, 1, 2)
	wait := r.awaitWaiting(t, 1)
	for range 5 { // five heartbeats: well past the first lease's end
		r.beatsArmed(t, 2)
		r.clk.Advance(20 * time.Second)
		want := r.clk.Now().Add(time.Minute)
		testutil.Eventually(t, "the waiting job's lease renewed", func() bool {
			return r.state(wait[0]).LeaseUntil.Equal(want)
		})
	}
	r.g.release <- struct{}{}
	r.g.release <- struct{}{}
	testutil.Eventually(t, "both to complete", func() bool { return r.count(queue.StateCompleted) == 2 })
}

// Jobs still waiting for a slot when Run's context ends go back to
// pending at once, their attempt not spent, while the running job gets
// its grace period.
func TestPrefetchGivesWaitingJobsBackOnStop(t *testing.T) {
	r := prefetchWorker(t, 1, 2, 3)
	wait := r.awaitWaiting(t, 2)
	r.stop()
	for _, id := range wait {
		testutil.Eventually(t, "the waiting job back in pending", func() bool {
			return r.state(id).State == queue.StatePending
		})
		if got := r.state(id).Attempt; got != 0 {
			t.Fatalf("attempt of a job given back: got %d, want 0", got)
		}
	}
	if running, _, _ := r.g.snapshot(); len(running) != 1 {
		t.Fatalf("running after stop: %v; want the one job, in its grace period", running)
	}
	r.g.release <- struct{}{}
	if err := <-r.errc; err != nil {
		t.Fatalf("Run: %v", err)
	}
	r.errc <- nil // for the cleanup
	if got := r.count(queue.StateCompleted); got != 1 {
		t.Fatalf("completed: got %d, want 1", got)
	}
}

// A job cancelled while it waits for a slot ends cancelled at its next
// heartbeat, and its handler never runs.
func TestPrefetchCancelWhileWaiting(t *testing.T) {
	r := prefetchWorker(t, 1, 1, 2)
	wait := r.awaitWaiting(t, 1)
	if _, err := r.cl.Cancel(context.Background(), wait[0]); err != nil {
		t.Fatal(err)
	}
	r.beatsArmed(t, 2)
	r.clk.Advance(20 * time.Second) // a heartbeat hears of it
	testutil.Eventually(t, "the waiting job cancelled", func() bool {
		return r.state(wait[0]).State == queue.StateCancelled
	})
	r.g.release <- struct{}{}
	testutil.Eventually(t, "the other to complete", func() bool { return r.count(queue.StateCompleted) == 1 })
	if _, ran, _ := r.g.snapshot(); len(ran) != 1 {
		t.Fatalf("handler runs: %v; want only the job that was not cancelled", ran)
	}
}

// Prefetched jobs start in the order they were leased, the store's
// order: by priority, then enqueue order, whichever goroutine is
// scheduled first.
func TestPrefetchStartsInLeaseOrder(t *testing.T) {
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	store, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlitequeue.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cl := queue.NewClient(store)
	var want []string
	for i, pr := range []int{5, 1, 3, 1, 0, 3} {
		j, err := cl.Enqueue(context.Background(), queue.JobSpec{Queue: "q", Kind: "k", Priority: pr, Payload: []byte{byte('a' + i)}})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, j.ID)
	}
	want = []string{want[4], want[1], want[3], want[2], want[5], want[0]}
	g := newGate()
	w := queue.NewWorker(store, queue.WorkerConfig{
		Queues: []string{"q"}, Concurrency: 1, Prefetch: 5, PollInterval: 24 * time.Hour,
		CleanupEvery: -1, Clock: clk, Logger: slog.New(slog.DiscardHandler),
	})
	w.Handle("k", g)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	for i := range want {
		testutil.Eventually(t, "the next job to start", func() bool {
			_, ran, _ := g.snapshot()
			return len(ran) == i+1
		})
		g.release <- struct{}{}
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, ran, _ := g.snapshot(); !slices.Equal(ran, want) {
		t.Fatalf("start order: got %v, want %v", ran, want)
	}
}

// leaseSpy records the Max of every Lease.
type leaseSpy struct {
	backend.Backend
	mu   sync.Mutex
	maxs []int
}

func (s *leaseSpy) Lease(ctx context.Context, req backend.LeaseRequest) ([]queue.Lease, error) {
	s.mu.Lock()
	s.maxs = append(s.maxs, req.Max)
	s.mu.Unlock()
	return s.Backend.Lease(ctx, req)
}

func (s *leaseSpy) leases() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.maxs...)
}

// A worker with a Prefetch leases again once half the Prefetch is free,
// not for each job that ends: more than half is still in hand, so no
// slot idles meanwhile, and the store serves fewer, larger leases.
func TestPrefetchLeasesHalfAtOnce(t *testing.T) {
	spy := &leaseSpy{}
	r := prefetchWorkerOn(t, 1, 4, 12, func(b backend.Backend) backend.Backend { spy.Backend = b; return spy })
	r.awaitWaiting(t, 4)
	for i := range 6 {
		r.g.release <- struct{}{}
		testutil.Eventually(t, fmt.Sprintf("%d jobs completed", i+1), func() bool { return r.count(queue.StateCompleted) == i+1 })
		if i%2 == 1 { // two places free: a lease of two
			r.awaitWaiting(t, 4)
		}
	}
	got := spy.leases()
	if len(got) == 0 || got[0] != 5 {
		t.Fatalf("leases asked for %v; want 5 first", got)
	}
	for _, n := range got[1:] {
		if n < 2 {
			t.Fatalf("leases asked for %v; want none for fewer than half the Prefetch (2) while busy", got)
		}
	}
	if len(got) < 4 {
		t.Fatalf("leases asked for %v; want the first and one per two jobs ended (3)", got)
	}
}
