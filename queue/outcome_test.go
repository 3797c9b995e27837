package queue_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// errBlip is the store fault the flaky backend answers with.
var errBlip = errors.New("flaky: connection reset by peer")

// flakyBackend wraps a real backend: its next `blips` outcome writes
// (Complete, Fail, Snooze) fail with errBlip before reaching the store,
// then, when final is set, every later one fails with final. Every outcome
// write is counted, every Lease call is reported on leased, and every
// write that ends the worker's retries (it reached the store, or met
// final) on settled once it has returned.
type flakyBackend struct {
	backend.Backend
	mu      sync.Mutex
	blips   int // -1: fail forever
	final   error
	writes  int
	leased  chan struct{}
	settled chan struct{}
}

// outcome counts a write and returns whether it ends the retries (no
// fault, or the final one) and the fault it meets, if any.
func (f *flakyBackend) outcome() (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	switch {
	case f.blips != 0:
		if f.blips > 0 {
			f.blips--
		}
		return false, fmt.Errorf("store: %w", errBlip)
	case f.final != nil:
		return true, fmt.Errorf("store: %w", f.final)
	}
	return true, nil
}

// signal reports on ch without waiting.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default: // the test is not watching any more
	}
}

func (f *flakyBackend) outcomeWrites() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

func (f *flakyBackend) Complete(ctx context.Context, id, token string, result []byte) error {
	last, err := f.outcome()
	if last {
		defer signal(f.settled)
	}
	if err != nil {
		return err
	}
	return f.Backend.Complete(ctx, id, token, result)
}

func (f *flakyBackend) Fail(ctx context.Context, id, token string, fl backend.Failure) (queue.State, error) {
	last, err := f.outcome()
	if last {
		defer signal(f.settled)
	}
	if err != nil {
		return "", err
	}
	return f.Backend.Fail(ctx, id, token, fl)
}

func (f *flakyBackend) Snooze(ctx context.Context, id, token string, d time.Duration) (queue.State, error) {
	last, err := f.outcome()
	if last {
		defer signal(f.settled)
	}
	if err != nil {
		return "", err
	}
	return f.Backend.Snooze(ctx, id, token, d)
}

func (f *flakyBackend) Lease(ctx context.Context, req backend.LeaseRequest) ([]queue.Lease, error) {
	ls, err := f.Backend.Lease(ctx, req)
	select {
	case f.leased <- struct{}{}:
	default: // the test is not counting leases any more
	}
	return ls, err
}

// retryClock is the fake clock that reports every timer of at most 2 s
// (the outcome retry waits; the test's other timers are all longer), so a
// test advances the clock exactly when a retry is waiting, and every timer
// of ShutdownTimeout (the grace period and the drain) on long.
type retryClock struct {
	*clock.Fake
	short, long chan time.Duration
	shutdown    time.Duration
}

func (c retryClock) NewTimer(d time.Duration) clock.Timer {
	t := c.Fake.NewTimer(d)
	ch := c.short
	switch {
	case d == c.shutdown:
		ch = c.long
	case d > 2*time.Second:
		return t
	}
	select {
	case ch <- d:
	default: // the test is not watching any more
	}
	return t
}

// outcomeHarness runs one job through a worker on a flaky real backend,
// all on one fake clock.
type outcomeHarness struct {
	t      *testing.T
	clk    retryClock
	store  backend.Backend
	b      *flakyBackend
	w      *queue.Worker
	runs   atomic.Int64
	fail   error // what the handler returns; nil completes with "ok"
	logs   *testutil.Buffer
	cancel context.CancelFunc
	done   chan error
}

// outcomeStores opens the real backends the outcome tests run on: SQLite
// on a temp file, redisqueue on miniredis, and on the Redis named by
// SLUICE_REDIS_URL when it is set.
func outcomeStores(t *testing.T) map[string]func(clk clock.Clock) backend.Backend {
	stores := map[string]func(clock.Clock) backend.Backend{
		"sqlite": func(clk clock.Clock) backend.Backend {
			b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlitequeue.Options{Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			return b
		},
		"miniredis": func(clk clock.Clock) backend.Backend {
			return openRedisQueue(t, &redis.Options{Addr: miniredis.RunT(t).Addr()}, "", clk)
		},
	}
	if opts, prefix, ok := redistest.Real(t); ok {
		stores["redis"] = func(clk clock.Clock) backend.Backend { return openRedisQueue(t, opts, prefix, clk) }
	}
	return stores
}

func openRedisQueue(t *testing.T, opts *redis.Options, prefix keyspace.Prefix, clk clock.Clock) backend.Backend {
	c := redis.NewClient(opts)
	b, err := redisqueue.New(c, redisqueue.Options{Prefix: prefix, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(); c.Close() })
	return b
}

func newOutcomeHarness(t *testing.T, open func(clock.Clock) backend.Backend, blips int, final error, cfg queue.WorkerConfig) *outcomeHarness {
	fake := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	h := &outcomeHarness{t: t, logs: &testutil.Buffer{}}
	h.store = open(fake)
	h.b = &flakyBackend{Backend: h.store, blips: blips, final: final, leased: make(chan struct{}, 64), settled: make(chan struct{}, 64)}
	cfg.Queues, cfg.Concurrency = []string{"q"}, 1
	cfg.PollInterval, cfg.RescueEvery, cfg.CleanupEvery = time.Hour, time.Hour, -1
	cfg.Logger = slog.New(giveUpSignal{slog.NewTextHandler(h.logs, nil), h.b.settled})
	if cfg.LeaseFor == 0 {
		cfg.LeaseFor = time.Hour
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = time.Hour
	}
	h.clk = retryClock{Fake: fake, short: make(chan time.Duration, 64), long: make(chan time.Duration, 4), shutdown: cfg.ShutdownTimeout}
	cfg.Clock = h.clk
	h.w = queue.NewWorker(h.b, cfg)
	h.w.Handle("k", queue.HandlerFunc(func(context.Context, *queue.Job) ([]byte, error) {
		h.runs.Add(1)
		if h.fail != nil {
			return nil, h.fail
		}
		return []byte("ok"), nil
	}))
	return h
}

// start enqueues one job and runs the worker; it returns the job's id
// once the worker has leased it.
func (h *outcomeHarness) start() string {
	j, err := queue.NewClient(h.store).Enqueue(context.Background(), queue.JobSpec{Queue: "q", Kind: "k"})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- h.w.Run(ctx) }()
	h.t.Cleanup(func() {
		// A retry or grace period still armed on the fake clock would hold
		// Run forever: move time on until it returns.
		cancel()
		for {
			select {
			case <-h.done:
				return
			case <-time.After(20 * time.Millisecond):
				h.clk.Advance(time.Hour)
			}
		}
	})
	h.wait(h.b.leased, "the first lease")
	return j.ID
}

// wait receives from ch within a generous deadline.
func (h *outcomeHarness) wait(ch <-chan struct{}, what string) {
	h.t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		h.t.Fatalf("timed out waiting for %s\nlogs:\n%s", what, h.logs.String())
	}
}

// retry advances the clock past the next retry wait, as soon as there is
// one; it returns false when the worker's retries ended instead (the write
// landed, met a final answer, or the worker gave up)
// has returned: it retries no more).
func (h *outcomeHarness) retry() bool {
	h.t.Helper()
	select {
	case d := <-h.clk.short:
		h.clk.Advance(d)
		return true
	case <-h.b.settled:
		return false
	case <-time.After(30 * time.Second):
		h.t.Fatalf("timed out waiting for a retry\nlogs:\n%s", h.logs.String())
		return false
	}
}

func (h *outcomeHarness) job(id string) *queue.Job {
	h.t.Helper()
	j, err := h.store.Get(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return j
}

// TestWorkerRetriesOutcomeThroughStoreBlip: the first outcome writes fail
// on a store fault; the worker writes again after a backoff until one
// lands. The job ends completed, once, with its handler run once, and is
// not rescued after its lease would have run out.
func TestWorkerRetriesOutcomeThroughStoreBlip(t *testing.T) {
	t.Parallel()
	for name, open := range outcomeStores(t) {
		t.Run(name, func(t *testing.T) {
			const blips = 3
			h := newOutcomeHarness(t, open, blips, nil, queue.WorkerConfig{})
			id := h.start()
			for i := 0; i < blips; i++ {
				if !h.retry() {
					t.Fatalf("the worker gave up after %d failed writes, want it to retry", i+1)
				}
			}
			h.wait(h.b.settled, "the outcome to land")
			j := h.job(id)
			if j.State != queue.StateCompleted || string(j.Result) != "ok" || j.Attempt != 1 {
				t.Fatalf("job = %s attempt %d result %q, want completed on attempt 1 with result ok", j.State, j.Attempt, j.Result)
			}
			if got := h.b.outcomeWrites(); got != blips+1 {
				t.Errorf("outcome writes = %d, want %d", got, blips+1)
			}
			h.clk.Advance(2 * time.Hour) // past the lease: nothing to rescue
			res, err := h.store.RescueExpired(context.Background(), backend.RescueRequest{})
			if err != nil || res.Total() != 0 {
				t.Errorf("RescueExpired after the lease = %+v, %v; want nothing rescued", res, err)
			}
			if got := h.runs.Load(); got != 1 {
				t.Errorf("handler ran %d times, want 1", got)
			}
			if got := strings.Count(h.logs.String(), "could not record job outcome; retrying"); got != 1 {
				t.Errorf("retry logged %d times within 5 s, want 1 (rate-limited):\n%s", got, h.logs.String())
			}
		})
	}
}

// TestWorkerRetriesFailedAttemptThroughStoreBlip: the fenced Fail of a
// failed attempt is retried the same way; the attempt is recorded once.
func TestWorkerRetriesFailedAttemptThroughStoreBlip(t *testing.T) {
	t.Parallel()
	h := newOutcomeHarness(t, outcomeStores(t)["sqlite"], 2, nil, queue.WorkerConfig{})
	h.fail = errors.New("upstream said no")
	id := h.start()
	for i := 0; i < 2; i++ {
		if !h.retry() {
			t.Fatalf("the worker gave up after %d failed writes, want it to retry", i+1)
		}
	}
	h.wait(h.b.settled, "the outcome to land")
	j := h.job(id)
	if j.State != queue.StateRetrying || j.Attempt != 1 || len(j.Errors) != 1 || j.LastError != "upstream said no" {
		t.Fatalf("job = %s attempt %d errors %d last %q, want retrying after attempt 1 with one error", j.State, j.Attempt, len(j.Errors), j.LastError)
	}
	if got := h.runs.Load(); got != 1 {
		t.Errorf("handler ran %d times, want 1", got)
	}
}

// TestWorkerStopsRetryingOutcomeOnFinalError: after a store fault, the
// retry meets an answer that retrying cannot change; the worker stops
// there instead of retrying until the lease ends.
func TestWorkerStopsRetryingOutcomeOnFinalError(t *testing.T) {
	t.Parallel()
	open := outcomeStores(t)["sqlite"]
	for _, final := range []error{queue.ErrLeaseLost, queue.ErrNotFound, queue.ErrClosed} {
		t.Run(final.Error(), func(t *testing.T) {
			h := newOutcomeHarness(t, open, 1, final, queue.WorkerConfig{})
			h.start()
			if !h.retry() {
				t.Fatal("the worker did not retry after a store fault")
			}
			if h.retry() {
				t.Fatalf("the worker retried after %v, want it to stop", final)
			}
			if got := h.b.outcomeWrites(); got != 2 {
				t.Errorf("outcome writes = %d, want 2 (the blip, then the final answer)", got)
			}
		})
	}
}

// TestWorkerGivesUpOutcomeAtLeaseEnd: with the store failing every outcome
// write, the worker retries until the lease's deadline, then stops; the job
// is left active for the rescuer, which puts it back once the lease has
// expired.
func TestWorkerGivesUpOutcomeAtLeaseEnd(t *testing.T) {
	t.Parallel()
	const lease = 10 * time.Second
	h := newOutcomeHarness(t, outcomeStores(t)["sqlite"], -1, nil, queue.WorkerConfig{LeaseFor: lease})
	id := h.start()
	until := h.job(id).LeaseUntil
	tries := 0
	for h.retry() {
		tries++
	}
	if now := h.clk.Now(); now.Before(until) || now.After(until.Add(2*time.Second)) {
		t.Errorf("gave up at %s, want at the lease deadline %s", now, until)
	}
	if tries < 5 {
		t.Errorf("%d retries within a %s lease, want at least 5", tries, lease)
	}
	if j := h.job(id); j.State != queue.StateActive {
		t.Fatalf("job %s after giving up, want still active until rescued", j.State)
	}
	h.clk.Advance(time.Millisecond)
	res, err := h.store.RescueExpired(context.Background(), backend.RescueRequest{})
	if err != nil || res.Requeued != 1 {
		t.Errorf("RescueExpired = %+v, %v; want the job requeued", res, err)
	}
	if !strings.Contains(h.logs.String(), "gave up recording job outcome") {
		t.Errorf("no give-up logged:\n%s", h.logs.String())
	}
}

// TestWorkerOutcomeRetriesOutliveStop: Run's context ends while an outcome
// write is being retried. The retry goes on through the grace period and
// lands; Run returns after it, the job completed once.
func TestWorkerOutcomeRetriesOutliveStop(t *testing.T) {
	t.Parallel()
	h := newOutcomeHarness(t, outcomeStores(t)["sqlite"], 3, nil, queue.WorkerConfig{})
	id := h.start()
	if !h.retry() {
		t.Fatal("the worker did not retry")
	}
	h.cancel()
	for i := 0; i < 2; i++ {
		select {
		case d := <-h.clk.short:
			h.clk.Advance(d)
		case <-time.After(30 * time.Second):
			t.Fatalf("timed out waiting for retry %d after the stop", i+2)
		}
	}
	select {
	case err := <-h.done:
		h.done <- err // for the cleanup
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return once the outcome landed")
	}
	if j := h.job(id); j.State != queue.StateCompleted || h.runs.Load() != 1 {
		t.Fatalf("job %s after %d runs, want completed after 1", j.State, h.runs.Load())
	}
}

// TestWorkerOutcomeRetriesEndWithDrain: with the store failing every
// outcome write, a stopping worker retries through the grace period and
// the drain after it (ShutdownTimeout each), then gives up and returns;
// the job stays active for the rescuer.
func TestWorkerOutcomeRetriesEndWithDrain(t *testing.T) {
	t.Parallel()
	const grace = 10 * time.Second
	h := newOutcomeHarness(t, outcomeStores(t)["sqlite"], -1, nil, queue.WorkerConfig{ShutdownTimeout: grace})
	id := h.start()
	if !h.retry() {
		t.Fatal("the worker did not retry")
	}
	h.cancel()
	h.waitLong("the grace period to start")
	drainAt := h.clk.Now().Add(grace) // the drain starts when the grace period ends
	for h.clk.Now().Before(drainAt) {
		if !h.retry() {
			t.Fatal("the worker stopped retrying during the grace period")
		}
	}
	h.waitLong("the drain to start") // no retry advances the clock meanwhile
	drainAt = h.clk.Now()
	for h.clk.Now().Before(drainAt.Add(grace)) {
		if !h.retry() {
			t.Fatal("the worker stopped retrying during the drain")
		}
	}
	select { // the drain is over: Run returns with no more time passing
	case err := <-h.done:
		h.done <- err
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Run did not return at the end of the drain\nlogs:\n%s", h.logs.String())
	}
	if j := h.job(id); j.State != queue.StateActive || h.runs.Load() != 1 {
		t.Errorf("job %s after %d runs, want still active after 1 (rescued later)", j.State, h.runs.Load())
	}
	if !strings.Contains(h.logs.String(), "because=\"the worker stopped\"") {
		t.Errorf("no give-up at the stop logged:\n%s", h.logs.String())
	}
}

// waitLong waits until a ShutdownTimeout timer is armed.
func (h *outcomeHarness) waitLong(what string) {
	h.t.Helper()
	select {
	case <-h.clk.long:
	case <-time.After(30 * time.Second):
		h.t.Fatalf("timed out waiting for %s\nlogs:\n%s", what, h.logs.String())
	}
}

// giveUpSignal is a log handler that reports on ch each time the worker
// logs that it gave up writing an outcome.
type giveUpSignal struct {
	slog.Handler
	ch chan struct{}
}

func (g giveUpSignal) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "queue: gave up recording job outcome") {
		defer signal(g.ch)
	}
	return g.Handler.Handle(ctx, r)
}

func (g giveUpSignal) WithAttrs(as []slog.Attr) slog.Handler {
	return giveUpSignal{g.Handler.WithAttrs(as), g.ch}
}

func (g giveUpSignal) WithGroup(name string) slog.Handler {
	return giveUpSignal{g.Handler.WithGroup(name), g.ch}
}
