package queue_test

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
	"github.com/sluicehq/sluice/ratelimit"
)

// busyBackend counts the store calls under way, the jobs leased and the
// jobs whose lease ended (completed, snoozed or given back), so that a
// test on a fake clock can tell when the workers have settled: no job is
// between its lease and its end, where its admission and start happen.
type busyBackend struct {
	backend.Backend
	busy   atomic.Int64
	leased atomic.Int64
	ended  atomic.Int64
}

func (b *busyBackend) Lease(ctx context.Context, req backend.LeaseRequest) ([]queue.Lease, error) {
	b.busy.Add(1)
	defer b.busy.Add(-1)
	ls, err := b.Backend.Lease(ctx, req)
	b.leased.Add(int64(len(ls)))
	return ls, err
}

func (b *busyBackend) Complete(ctx context.Context, id, token string, result []byte) error {
	b.busy.Add(1)
	defer b.busy.Add(-1)
	defer b.ended.Add(1)
	return b.Backend.Complete(ctx, id, token, result)
}

func (b *busyBackend) Snooze(ctx context.Context, id, token string, d time.Duration) (queue.State, error) {
	b.busy.Add(1)
	defer b.busy.Add(-1)
	defer b.ended.Add(1)
	return b.Backend.Snooze(ctx, id, token, d)
}

func (b *busyBackend) Requeue(ctx context.Context, id, token string) (queue.State, error) {
	b.busy.Add(1)
	defer b.busy.Add(-1)
	defer b.ended.Add(1)
	return b.Backend.Requeue(ctx, id, token)
}

// fleet is three workers on one SQLite store and one budget store, all on
// one fake clock.
type fleet struct {
	t       *testing.T
	clk     *clock.Fake
	b       *busyBackend
	budgets *budget.Budgets
	poll    time.Duration
	mu      sync.Mutex
	starts  []startAt
	workers int
}

type startAt struct {
	at     time.Time
	tenant string
}

func newFleet(t *testing.T, clk *clock.Fake, open func() ratelimit.Admitter, cfg budget.Config, claim func(*queue.Job) budget.Claim, concurrency int, pause bool) *fleet {
	t.Helper()
	sq, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlitequeue.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.Close() })
	f := &fleet{t: t, clk: clk, b: &busyBackend{Backend: sq}, poll: 25 * time.Millisecond, workers: 3}
	defs := map[string]budget.Config{"api": cfg}
	f.budgets = newJobBudgets(t, clk, open(), defs)
	for range f.workers { // each its own Budgets and store client: three processes
		b := newJobBudgets(t, clk, open(), defs)
		w := queue.NewWorker(f.b, queue.WorkerConfig{Queues: []string{"q"}, Concurrency: concurrency, PollInterval: f.poll,
			LeaseFor: time.Minute, HeartbeatEvery: 20 * time.Second, RescueEvery: time.Hour, CleanupEvery: -1, Clock: clk,
			Budgets: queue.JobBudgets{Budgets: b, Claim: claim, PauseQueue: pause}})
		w.Handle("k", queue.HandlerFunc(func(ctx context.Context, job *queue.Job) ([]byte, error) {
			f.mu.Lock()
			f.starts = append(f.starts, startAt{clk.Now(), job.Tenant})
			f.mu.Unlock()
			return nil, nil
		}))
		runWorker(t, w)
	}
	return f
}

// settled reports whether every worker is idle, waiting for its next
// poll, with no store call or job under way.
func (f *fleet) settled() bool {
	if f.b.busy.Load() != 0 || f.b.leased.Load() != f.b.ended.Load() {
		return false
	}
	next := f.clk.Now().Add(f.poll)
	polls := 0
	for _, at := range f.clk.Pending() {
		if at.Equal(next) {
			polls++
		} else if at.Before(next) {
			return false
		}
	}
	return polls == f.workers
}

// runFor advances the clock a poll at a time for d, letting the workers
// settle at each step.
func (f *fleet) runFor(d time.Duration) {
	f.t.Helper()
	end := f.clk.Now().Add(d)
	for f.clk.Now().Before(end) {
		deadline := time.Now().Add(30 * time.Second)
		for !f.settled() {
			if time.Now().After(deadline) {
				f.t.Fatalf("the workers did not settle at %s: pending timers %v", f.clk.Now(), f.clk.Pending())
			}
			time.Sleep(100 * time.Microsecond) // real time for real goroutines: polled with a deadline
		}
		f.clk.Advance(f.poll)
	}
}

func (f *fleet) enqueue(tenant string, n int) {
	f.t.Helper()
	specs := make([]queue.JobSpec, n)
	for i := range specs {
		specs[i] = queue.JobSpec{Queue: "q", Kind: "k", Tenant: tenant}
	}
	if _, err := queue.NewClient(f.b).EnqueueBatch(context.Background(), specs); err != nil {
		f.t.Fatal(err)
	}
}

func onAPI(*queue.Job) budget.Claim {
	return budget.Claim{Costs: map[string]budget.Cost{"api": {}}}
}

// TestBudgetFleetOfWorkers: a budget of 10 starts a second shared by three
// workers over 20 s of fake time: no 1-second window starts more than 10,
// and the fleet uses at least 90% of the budget — with the queue paused on
// a hold, and with only the held jobs waiting.
func TestBudgetFleetOfWorkers(t *testing.T) {
	t.Run("PauseQueue=true", func(t *testing.T) {
		forEachLimitStore(t, func(t *testing.T, clk *clock.Fake, open func() ratelimit.Admitter) {
			testBudgetFleet(t, clk, open, true)
		})
	})
	// Unpaused, the fleet leases and gives back hundreds of held jobs a
	// second: on memlimit only, which is what the budget decides on.
	t.Run("PauseQueue=false", func(t *testing.T) {
		clk := clock.NewFake(time.Unix(1_700_000_000, 0))
		testBudgetFleet(t, clk, limitStores[0].open(t, clk), false)
	})
}

func testBudgetFleet(t *testing.T, clk *clock.Fake, open func() ratelimit.Admitter, pause bool) {
	if !pause && testing.Short() {
		t.Skip("leases and gives back hundreds of held jobs a second through SQLite: 20 s")
	}
	f := newFleet(t, clk, open, budget.Config{Limits: budget.Limits{Requests: budget.Rate{Quota: 10, Window: time.Second, Burst: 1}}}, onAPI, 4, pause)
	// Unpaused, every opening churns through leases of held jobs, slow
	// under the race detector: 5 s of fake time unless the run is full.
	secs := 20
	if !pause {
		secs = testutil.Size(5, 20)
	}
	f.enqueue("", 20*secs)
	start := f.clk.Now()
	f.runFor(time.Duration(secs) * time.Second)
	f.mu.Lock()
	defer f.mu.Unlock()
	if want := 9 * secs; len(f.starts) < want {
		t.Errorf("the fleet started %d jobs in %ds, want at least %d (90%% of %d)", len(f.starts), secs, want, 10*secs)
	}
	// Every window of one second, sliding from start to start.
	for i, s := range f.starts {
		n := 0
		for _, o := range f.starts[i:] {
			if o.at.Sub(s.at) < time.Second {
				n++
			}
		}
		if n > 10 {
			t.Fatalf("%d starts in the second from %s, want at most 10", n, s.at.Sub(start))
		}
	}
	t.Logf("%d starts in %ds", len(f.starts), secs)
}

// TestBudgetTenantFairness: tenant a enqueues 10,000 jobs on a budget,
// tenant b 10 afterwards: the queue's fair order between tenants holds
// through the budget, so b's first job starts within the next few
// admissions (at most two lease rounds of the fleet, the one that may be
// under way when b enqueues and the next: 2 × 3 workers × 4 slots = 24),
// and b's jobs take their turns after that.
func TestBudgetTenantFairness(t *testing.T) {
	forEachLimitStore(t, testBudgetTenantFairness)
}

func testBudgetTenantFairness(t *testing.T, clk *clock.Fake, open func() ratelimit.Admitter) {
	f := newFleet(t, clk, open, budget.Config{Limits: budget.Limits{Requests: budget.Rate{Quota: 10, Window: time.Second, Burst: 1}}},
		func(j *queue.Job) budget.Claim {
			return budget.Claim{Tenant: j.Tenant, Costs: map[string]budget.Cost{"api": {}}}
		}, 4, true)
	f.enqueue("a", 10_000)
	f.runFor(time.Second) // a has the budget to itself
	f.mu.Lock()
	before := len(f.starts)
	f.mu.Unlock()
	f.enqueue("b", 10)
	f.runFor(4 * time.Second)
	f.mu.Lock()
	defer f.mu.Unlock()
	first, bs := -1, 0
	for i, s := range f.starts[before:] {
		if s.tenant == "b" {
			bs++
			if first < 0 {
				first = i
			}
		}
	}
	t.Logf("b's first start after %d admissions of a; b started %d of %d", first, bs, len(f.starts)-before)
	if first < 0 || first > 24 {
		t.Errorf("b's first job started after %d admissions of a, want at most 24", first)
	}
	// Taking turns, b's ten would all start within 20 of the 40
	// admissions; a lease round's jobs of a already in hand may go first.
	if bs < 8 {
		t.Errorf("b started %d of its 10 jobs in 4s of a 10/s budget, want at least 8", bs)
	}
}
