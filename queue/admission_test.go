package queue_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// fakeLoad is a LoadMonitor the test switches.
type fakeLoad struct {
	mu   sync.Mutex
	over bool
	why  string
}

func (f *fakeLoad) Overloaded() (bool, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.over, f.why
}

func (f *fakeLoad) set(over bool, why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.over, f.why = over, why
}

// spyBackend counts Stats calls, can fail Stats and Enqueue, and reports
// heartbeats and completions.
type spyBackend struct {
	backend.Backend
	stats       atomic.Int64
	failStats   atomic.Bool
	failEnqueue atomic.Bool
	enqueueErr  error // what a failed Enqueue returns; default errFault
	extended    chan string
	completed   chan string
}

var errFault = errors.New("store fault")

func (s *spyBackend) Stats(ctx context.Context) ([]queue.QueueStats, error) {
	s.stats.Add(1)
	if s.failStats.Load() {
		return nil, errFault
	}
	return s.Backend.Stats(ctx)
}

func (s *spyBackend) Enqueue(ctx context.Context, specs []queue.JobSpec) ([]queue.Enqueued, error) {
	if s.failEnqueue.Load() {
		if s.enqueueErr != nil {
			return nil, s.enqueueErr
		}
		return nil, errFault
	}
	return s.Backend.Enqueue(ctx, specs)
}

func (s *spyBackend) Extend(ctx context.Context, id, token string, d time.Duration) (backend.LeaseStatus, error) {
	st, err := s.Backend.Extend(ctx, id, token, d)
	if s.extended != nil {
		s.extended <- id
	}
	return st, err
}

func (s *spyBackend) Complete(ctx context.Context, id, token string, result []byte) error {
	err := s.Backend.Complete(ctx, id, token, result)
	if s.completed != nil {
		s.completed <- id
	}
	return err
}

func openSQLite(t *testing.T) *spyBackend {
	t.Helper()
	b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlitequeue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return &spyBackend{Backend: b}
}

// depth returns the jobs of q waiting to run, straight from the backend.
func depth(t *testing.T, b backend.Backend, q string) int64 {
	t.Helper()
	st, err := b.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.Queue == q {
			return s.Counts[queue.StateScheduled] + s.Counts[queue.StatePending] + s.Counts[queue.StateWaiting] + s.Counts[queue.StateRetrying]
		}
	}
	return 0
}

func wantOverloaded(t *testing.T, err error, reason string, after time.Duration) {
	t.Helper()
	var oe *queue.OverloadedError
	switch {
	case !errors.Is(err, queue.ErrOverloaded) || !errors.As(err, &oe):
		t.Fatalf("got %v, want an *OverloadedError", err)
	case oe.Reason != reason || oe.After != after || oe.RetryAfter() != after:
		t.Fatalf("got %q after %s, want %q after %s", oe.Reason, oe.RetryAfter(), reason, after)
	case err.Error() != "queue: overloaded: "+reason:
		t.Fatalf("message %q", err.Error())
	}
}

func TestEnqueueRefusedWhileOverloaded(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		over      bool
		why       string
		retry     time.Duration
		wantWhy   string
		wantAfter time.Duration
	}{
		{"overloaded", true, "cpu 93% (threshold 80%)", 0, "cpu 93% (threshold 80%)", queue.DefaultOverloadRetryAfter},
		{"no reason given, own retry-after", true, "", 2 * time.Second, "the system is overloaded", 2 * time.Second},
		{"not overloaded", false, "", 0, "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := openSQLite(t)
			load := &fakeLoad{}
			load.set(c.over, c.why)
			cl := queue.NewClient(b, queue.ClientConfig{Admission: queue.Admission{Monitor: load, RetryAfter: c.retry}})
			_, err := cl.Enqueue(context.Background(), queue.JobSpec{Queue: "q", Kind: "k"})
			if !c.over {
				if err != nil || depth(t, b, "q") != 1 {
					t.Fatalf("got %v, depth %d; want the job stored", err, depth(t, b, "q"))
				}
				return
			}
			wantOverloaded(t, err, c.wantWhy, c.wantAfter)
			if d := depth(t, b, "q"); d != 0 {
				t.Errorf("refused enqueue stored %d jobs", d)
			}
			load.set(false, "")
			if _, err := cl.Enqueue(context.Background(), queue.JobSpec{Queue: "q", Kind: "k"}); err != nil {
				t.Errorf("after the overload: %v", err)
			}
		})
	}
}

func TestEnqueueDepthCap(t *testing.T) {
	t.Parallel()
	b := openSQLite(t)
	clk := clock.NewFake(time.Now())
	cl := queue.NewClient(b, queue.ClientConfig{Admission: queue.Admission{
		MaxDepth: 3, QueueMaxDepth: map[string]int64{"big": 5, "free": -1, "zero": 0}, Clock: clk,
	}})
	ctx := context.Background()
	later := time.Now().Add(time.Hour)
	steps := []struct {
		queues []string
		runAt  time.Time
		want   string // "": stored; "invalid"; else the overload reason
	}{
		{[]string{"a"}, later, ""}, // scheduled jobs count too
		{[]string{"a", "a"}, time.Time{}, ""},
		{[]string{"a"}, time.Time{}, "queue a is over its depth cap: 3 jobs waiting + 1 > cap 3"},
		{[]string{"big", "big", "big", "big", "big", "big"}, time.Time{}, "invalid"},
		{[]string{"big", "big", "big", "big"}, time.Time{}, ""},
		{[]string{"big", "big"}, time.Time{}, "queue big is over its depth cap: 4 jobs waiting + 2 > cap 5"},
		{[]string{"free", "free", "free", "free", "free", "free"}, time.Time{}, ""},
		{[]string{"free", "a"}, time.Time{}, "queue a is over its depth cap: 3 jobs waiting + 1 > cap 3"},
		{[]string{"zero", "zero", "zero", "zero"}, time.Time{}, "invalid"}, // 0 keeps MaxDepth
	}
	for i, st := range steps {
		specs := make([]queue.JobSpec, len(st.queues))
		for j, q := range st.queues {
			specs[j] = queue.JobSpec{Queue: q, Kind: "k", RunAt: st.runAt}
		}
		_, err := cl.EnqueueBatch(ctx, specs)
		switch st.want {
		case "":
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		case "invalid":
			var ia *queue.InvalidArgumentError
			if !errors.As(err, &ia) || ia.Field != "specs" || !strings.Contains(ia.Rule, "more than its depth cap") {
				t.Fatalf("step %d: got %v, want an invalid argument", i, err)
			}
		default:
			wantOverloaded(t, err, st.want, queue.DefaultOverloadRetryAfter)
		}
	}
	for q, want := range map[string]int64{"a": 3, "big": 4, "free": 6} {
		if got := depth(t, b, q); got != want {
			t.Errorf("queue %s holds %d jobs, want %d (refused batches store nothing)", q, got, want)
		}
	}
	// An active job does not count, once the cached depth is read again.
	if ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"a"}, WorkerID: "w", Max: 1, LeaseFor: time.Minute}); err != nil || len(ls) != 1 {
		t.Fatalf("lease: %v %d", err, len(ls))
	}
	if _, err := cl.Enqueue(ctx, queue.JobSpec{Queue: "a", Kind: "k"}); !errors.Is(err, queue.ErrOverloaded) {
		t.Fatalf("within the cache period: got %v, want ErrOverloaded", err)
	}
	clk.Advance(queue.DefaultDepthCacheFor)
	if _, err := cl.Enqueue(ctx, queue.JobSpec{Queue: "a", Kind: "k"}); err != nil {
		t.Fatalf("after a refresh: %v", err)
	}
}

func TestDepthCache(t *testing.T) {
	t.Parallel()
	b := openSQLite(t)
	clk := clock.NewFake(time.Now())
	adm := queue.Admission{MaxDepth: 2, DepthCacheFor: 10 * time.Second, Clock: clk}
	cl := queue.NewClient(b, queue.ClientConfig{Admission: adm})
	ctx := context.Background()
	enqueue := func(key string) error {
		_, err := cl.Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k", UniqueKey: key})
		return err
	}
	// A duplicate stores nothing, so it takes no place.
	for _, key := range []string{"u1", "u1", "u2"} {
		if err := enqueue(key); err != nil && !errors.Is(err, queue.ErrDuplicate) {
			t.Fatalf("%s: %v", key, err)
		}
	}
	if err := enqueue("u3"); !errors.Is(err, queue.ErrOverloaded) {
		t.Fatalf("third job: got %v, want ErrOverloaded", err)
	}
	if n := b.stats.Load(); n != 1 {
		t.Errorf("Stats read %d times within the cache period, want 1", n)
	}
	// Another client reads the store and sees this one's jobs.
	other := queue.NewClient(b, queue.ClientConfig{Admission: adm})
	if _, err := other.Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k"}); !errors.Is(err, queue.ErrOverloaded) {
		t.Fatalf("other client: got %v, want ErrOverloaded", err)
	}
	if _, err := b.Cancel(ctx, mustFirst(t, b, "q")); err != nil {
		t.Fatal(err)
	}
	clk.Advance(10 * time.Second)
	// A read fault is returned, not hidden, and stores nothing.
	b.failStats.Store(true)
	if err := enqueue("u4"); !errors.Is(err, errFault) || !strings.HasPrefix(err.Error(), "queue: ") {
		t.Fatalf("Stats fault: got %v", err)
	}
	b.failStats.Store(false)
	// A failed enqueue gives back the place it had taken.
	b.failEnqueue.Store(true)
	if err := enqueue("u5"); !errors.Is(err, errFault) {
		t.Fatalf("Enqueue fault: got %v", err)
	}
	b.failEnqueue.Store(false)
	if err := enqueue("u6"); err != nil {
		t.Fatalf("after the fault: %v", err)
	}
	if d := depth(t, b, "q"); d != 2 {
		t.Errorf("depth %d, want 2", d)
	}
}

// TestBacklogFullIsOverloaded: a tenant's full backlog, refused by the
// backend, reaches the caller as an overload that still matches
// ErrBacklogFull.
func TestBacklogFullIsOverloaded(t *testing.T) {
	t.Parallel()
	b := openSQLite(t)
	full := &queue.BacklogFullError{Tenant: "acme", Backlog: 50000, Cap: 50000}
	b.enqueueErr = full
	b.failEnqueue.Store(true)
	cl := queue.NewClient(b, queue.ClientConfig{Admission: queue.Admission{RetryAfter: 3 * time.Second}})
	_, err := cl.Enqueue(context.Background(), queue.JobSpec{Queue: "q", Kind: "k", Tenant: "acme"})
	wantOverloaded(t, err, "tenant acme backlog full (50000 jobs ready or waiting, cap 50000)", 3*time.Second)
	var got *queue.BacklogFullError
	if !errors.Is(err, queue.ErrBacklogFull) || !errors.As(err, &got) || got != full {
		t.Errorf("%v does not carry the backlog error", err)
	}
	// Other faults pass through as they are.
	b.enqueueErr = errFault
	if _, err := cl.Enqueue(context.Background(), queue.JobSpec{Queue: "q", Kind: "k"}); err != errFault {
		t.Errorf("got %v, want the fault itself", err)
	}
}

func mustFirst(t *testing.T, b backend.Backend, q string) string {
	t.Helper()
	p, err := b.List(context.Background(), queue.ListFilter{Queue: q, Limit: 1})
	if err != nil || len(p.Jobs) == 0 {
		t.Fatalf("list: %v", err)
	}
	return p.Jobs[0].ID
}

// TestConcurrentEnqueuesKeepTheCap: one client's concurrent enqueues
// cannot all pass the last free place.
func TestConcurrentEnqueuesKeepTheCap(t *testing.T) {
	t.Parallel()
	b := openSQLite(t)
	cl := queue.NewClient(b, queue.ClientConfig{Admission: queue.Admission{MaxDepth: 10, Clock: clock.NewFake(time.Now())}})
	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	for range 25 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := cl.Enqueue(context.Background(), queue.JobSpec{Queue: "q", Kind: "k"})
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, queue.ErrOverloaded):
				refused.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 10 || refused.Load() != 15 || depth(t, b, "q") != 10 {
		t.Errorf("stored %d, refused %d, depth %d; want 10, 15, 10", ok.Load(), refused.Load(), depth(t, b, "q"))
	}
}

// instantBackend answers Enqueue and Stats at once, so that a benchmark
// measures the client's admission step alone.
type instantBackend struct {
	backend.Backend
	stats []queue.QueueStats
}

func (b instantBackend) Enqueue(_ context.Context, specs []queue.JobSpec) ([]queue.Enqueued, error) {
	return make([]queue.Enqueued, len(specs)), nil
}

func (b instantBackend) Stats(context.Context) ([]queue.QueueStats, error) { return b.stats, nil }

// BenchmarkEnqueueAdmission compares the client's enqueue path with no
// admission, with a monitor, and with a monitor and a depth cap (cached
// depths).
func BenchmarkEnqueueAdmission(b *testing.B) {
	be := instantBackend{stats: []queue.QueueStats{{Queue: "q", Counts: map[queue.State]int64{queue.StatePending: 10}}}}
	cases := []struct {
		name string
		adm  queue.Admission
	}{
		{"off", queue.Admission{}},
		{"monitor", queue.Admission{Monitor: &fakeLoad{}}},
		{"monitor+depth", queue.Admission{Monitor: &fakeLoad{}, MaxDepth: 1 << 62}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			cl := queue.NewClient(be, queue.ClientConfig{Admission: c.adm})
			ctx := context.Background()
			spec := queue.JobSpec{Queue: "q", Kind: "k"}
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := cl.Enqueue(ctx, spec); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
