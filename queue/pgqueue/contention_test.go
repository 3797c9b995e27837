package pgqueue_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/pgqueue"
)

// The tests of this file run several worker processes' worth of stores
// on one database of their own, so that the server's count of deadlocks
// there (pg_stat_database.deadlocks) is theirs alone.

// contention is one run of workers over tenants at a limit.
type contention struct {
	stores, concurrency int  // workers, and handlers per worker
	shared              bool // the workers share one store
	tenants, limit      int  // limit 0: the tenants have none
	jobs                int  // plain jobs, spread over the tenants
	groups              int  // groups at a limit of 4 the jobs are spread over too
	admin               bool // the tenants' settings are set again during the run
	flows               int  // chains of three jobs, each in one tenant
}

// contentionResult is what a run saw.
type contentionResult struct {
	took      time.Duration
	deadlocks int64    // counted by the server during the run
	errs      []string // logged by the workers: store errors
	overLimit []string // tenants seen running more than their limit
}

// size picks the full or the default version of a run: the full one
// with the full matrix and without the race detector (testutil.Size).
func size(full, small contention) contention {
	if testutil.Size(0, 1) == 1 {
		return full
	}
	return small
}

// TestTenantsAcrossWorkers: workers of separate stores draining the jobs
// of tenants at a limit take the scheduler's locks in one order, so the
// server finds no deadlock and no store call fails; and no tenant runs
// more than its limit. So do workers sharing one store, and tenants
// without limits.
func TestTenantsAcrossWorkers(t *testing.T) {
	c := size(contention{stores: 4, concurrency: 16, tenants: 20, limit: 3, jobs: 2000},
		contention{stores: 4, concurrency: 8, tenants: 20, limit: 3, jobs: 400})
	t.Run("one store", func(t *testing.T) {
		oc := c
		oc.shared = true
		checkContention(t, oc, runContention(t, oc))
	})
	t.Run("groups across tenants", func(t *testing.T) {
		oc := c
		oc.groups, oc.admin = 7, true
		checkContention(t, oc, runContention(t, oc))
	})
	t.Run("no limits", func(t *testing.T) {
		oc := c
		oc.limit = 0
		checkContention(t, oc, runContention(t, oc))
	})
	r := runContention(t, c)
	checkContention(t, c, r)
	if testutil.Size(0, 1) == 1 {
		oc := contention{stores: 1, concurrency: c.stores * c.concurrency, tenants: c.tenants, limit: c.limit, jobs: c.jobs}
		one := runContention(t, oc)
		checkContention(t, oc, one)
		t.Logf("%d workers of %d: %v; 1 worker of %d: %v (%.2fx the one worker's time)",
			c.stores, c.concurrency, r.took, c.stores*c.concurrency, one.took, r.took.Seconds()/one.took.Seconds())
	}
}

// TestFlowsInTenantsAcrossWorkers: chains of jobs inside tenants, whose
// children the leases of several workers place as their parents end,
// with no deadlock, no store error, and no write made from a stale read
// (the jobs_valid constraint would refuse one as a store error).
func TestFlowsInTenantsAcrossWorkers(t *testing.T) {
	c := size(contention{stores: 4, concurrency: 16, tenants: 20, limit: 3, flows: 400},
		contention{stores: 4, concurrency: 8, tenants: 20, limit: 3, flows: 120})
	checkContention(t, c, runContention(t, c))
}

func checkContention(t *testing.T, c contention, r contentionResult) {
	t.Helper()
	t.Logf("%d workers (shared store: %v) x %d handlers, %d jobs and %d flows over %d tenants at limit %d: %v",
		c.stores, c.shared, c.concurrency, c.jobs, c.flows, c.tenants, c.limit, r.took)
	if r.deadlocks != 0 {
		t.Errorf("the server counted %d deadlocks; want none", r.deadlocks)
	}
	if len(r.errs) > 0 {
		t.Errorf("%d store errors; want none; the first: %s", len(r.errs), r.errs[0])
	}
	if len(r.overLimit) > 0 {
		t.Errorf("tenants over their limit of %d: %v", c.limit, r.overLimit)
	}
}

// runContention enqueues c's jobs and flows in a fresh database, drains
// them with c.stores workers each on its own store, and reports the run.
func runContention(t *testing.T, c contention) contentionResult {
	t.Helper()
	url := pgtest.Database(t, pgtest.URL(t))
	before := deadlocks(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stores := make([]*pgqueue.Store, c.stores)
	for i := range stores {
		if c.shared && i > 0 {
			stores[i] = stores[0]
			continue
		}
		s, err := pgqueue.Open(ctx, url, pgqueue.Options{Schema: "sluice", MaxConns: 6})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer s.Close()
		stores[i] = s
	}
	total := enqueueContention(t, stores[0], c)
	h := newTenantTracker(c.limit, total)
	logs := &errorLog{}
	start := time.Now()
	var wg sync.WaitGroup
	for _, s := range stores {
		w := queue.NewWorker(s, queue.WorkerConfig{Queues: []string{"q"}, Concurrency: c.concurrency,
			PollInterval: 100 * time.Millisecond, Logger: slog.New(logs)})
		w.Handle("k", h)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(ctx); err != nil {
				logs.add("Run: " + err.Error())
			}
		}()
	}
	if c.admin {
		wg.Add(1)
		go func() {
			defer wg.Done()
			setTenants(ctx, stores[len(stores)-1], c, logs)
		}()
	}
	select {
	case <-h.all:
	case <-time.After(5 * time.Minute):
		t.Errorf("after 5 minutes %d of %d jobs done", h.done.Load(), total)
	}
	took := time.Since(start)
	cancel()
	wg.Wait()
	for i, s := range stores {
		if i == 0 || !c.shared {
			s.Close()
		}
	}
	return contentionResult{took: took, deadlocks: deadlocks(t, url) - before, errs: logs.list(), overLimit: h.over()}
}

// enqueueContention stores c's jobs and flows through s and returns how
// many jobs they are.
func enqueueContention(t *testing.T, s *pgqueue.Store, c contention) int {
	t.Helper()
	ctx := context.Background()
	cl := queue.NewClient(s)
	for i := 0; i < c.tenants && c.limit > 0; i++ {
		if err := s.SetTenant(ctx, tenantName(i), queue.TenantConfig{Limit: c.limit}); err != nil {
			t.Fatalf("SetTenant: %v", err)
		}
	}
	for i := 0; i < c.groups; i++ {
		if _, err := s.CreateGroup(ctx, queue.GroupSpec{ID: groupName(i), MaxConcurrency: 4}); err != nil {
			t.Fatalf("CreateGroup: %v", err)
		}
	}
	var specs []queue.JobSpec
	for i := 0; i < c.jobs; i++ {
		sp := queue.JobSpec{Queue: "q", Kind: "k", Tenant: tenantName(i % c.tenants)}
		if c.groups > 0 {
			sp.Group = groupName(i % c.groups)
		}
		specs = append(specs, sp)
	}
	for len(specs) > 0 {
		n := min(len(specs), 100)
		if _, err := cl.EnqueueBatch(ctx, specs[:n]); err != nil {
			t.Fatalf("EnqueueBatch: %v", err)
		}
		specs = specs[n:]
	}
	for i := 0; i < c.flows; i++ {
		job := queue.JobSpec{Queue: "q", Kind: "k", Tenant: tenantName(i % c.tenants)}
		f := queue.FlowSpec{Nodes: []queue.FlowNode{{Name: "a", Job: job}, {Name: "b", Job: job}, {Name: "c", Job: job}},
			Edges: []queue.FlowEdge{{Parent: "a", Child: "b"}, {Parent: "b", Child: "c"}}}
		if _, err := cl.EnqueueFlow(ctx, f); err != nil {
			t.Fatalf("EnqueueFlow: %v", err)
		}
	}
	return c.jobs + 3*c.flows
}

func tenantName(i int) string { return fmt.Sprintf("t%02d", i) }

func groupName(i int) string { return fmt.Sprintf("g%02d", i) }

// setTenants sets the tenants' limits again and again until ctx ends: a
// step that locks a tenant and fills it, amid the workers' steps.
func setTenants(ctx context.Context, s *pgqueue.Store, c contention, logs *errorLog) {
	for i := 0; ctx.Err() == nil; i++ {
		err := s.SetTenant(ctx, tenantName(i%c.tenants), queue.TenantConfig{Limit: c.limit})
		if err != nil && ctx.Err() == nil {
			logs.add("SetTenant: " + err.Error())
		}
	}
}

// deadlocks reads the server's count of deadlocks in the database of url
// once every other session of it has ended, so that their counts have
// reached the statistics.
func deadlocks(t *testing.T, url string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("deadlocks: %v", err)
	}
	defer conn.Close(context.Background())
	for {
		var others int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&others)
		if err != nil {
			t.Fatalf("deadlocks: sessions: %v", err)
		}
		if others == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("deadlocks: %d sessions of the database still open", others)
		case <-time.After(20 * time.Millisecond):
		}
	}
	var n int64
	if _, err := conn.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
		t.Fatalf("deadlocks: %v", err)
	}
	if err := conn.QueryRow(ctx, `SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
		t.Fatalf("deadlocks: %v", err)
	}
	return n
}

// tenantTracker is the handler of a run: it counts the jobs done and each
// tenant's jobs running at once.
type tenantTracker struct {
	limit, total int
	done         atomic.Int64
	all          chan struct{}
	mu           sync.Mutex
	running      map[string]int
	exceeded     map[string]int
}

func newTenantTracker(limit, total int) *tenantTracker {
	return &tenantTracker{limit: limit, total: total, all: make(chan struct{}),
		running: map[string]int{}, exceeded: map[string]int{}}
}

func (h *tenantTracker) Work(_ context.Context, j *queue.Job) ([]byte, error) {
	h.mu.Lock()
	h.running[j.Tenant]++
	if n := h.running[j.Tenant]; h.limit > 0 && n > h.limit {
		h.exceeded[j.Tenant] = max(h.exceeded[j.Tenant], n)
	}
	h.mu.Unlock()
	runtime.Gosched() // let the other handlers run while this one counts
	h.mu.Lock()
	h.running[j.Tenant]--
	h.mu.Unlock()
	if h.done.Add(1) == int64(h.total) {
		close(h.all)
	}
	return nil, nil
}

func (h *tenantTracker) over() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for t, n := range h.exceeded {
		out = append(out, fmt.Sprintf("%s ran %d", t, n))
	}
	return out
}

// errorLog is a slog handler that keeps the records of level Warn and
// above: the workers log store errors there.
type errorLog struct {
	mu   sync.Mutex
	errs []string
}

func (l *errorLog) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelWarn }

func (l *errorLog) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool {
		msg += " " + a.String()
		return true
	})
	l.add(msg)
	return nil
}

func (l *errorLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *errorLog) WithGroup(string) slog.Handler      { return l }

func (l *errorLog) add(msg string) {
	l.mu.Lock()
	l.errs = append(l.errs, msg)
	l.mu.Unlock()
}

func (l *errorLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.errs...)
}

// TestRescueAcrossCompletions: rescuers of several stores taking expired
// jobs of tenants while those jobs' workers complete them lock in the
// same order as the completions (the tenants first, then the rows), so the
// server finds no deadlock: every job is either completed by its worker
// or rescued first (its Complete then says the lease was lost).
func TestRescueAcrossCompletions(t *testing.T) {
	const jobs, tenants, rescuers = 400, 10, 4
	url := pgtest.Database(t, pgtest.URL(t))
	before := deadlocks(t, url)
	ctx := context.Background()
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	stores := make([]*pgqueue.Store, rescuers)
	for i := range stores {
		s, err := pgqueue.Open(ctx, url, pgqueue.Options{Schema: "sluice", MaxConns: 6, Clock: clk})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer s.Close()
		stores[i] = s
	}
	specs := make([]queue.JobSpec, jobs)
	for i := range specs {
		specs[i] = queue.JobSpec{Queue: "q", Kind: "k", Tenant: tenantName(i % tenants)}
	}
	if _, err := stores[0].Enqueue(ctx, specs); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	var leases []queue.Lease
	for len(leases) < jobs {
		ls, err := stores[0].Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, WorkerID: "w", Max: 100, LeaseFor: time.Minute})
		if err != nil || len(ls) == 0 {
			t.Fatalf("Lease = %d jobs, %v, with %d of %d leased", len(ls), err, len(leases), jobs)
		}
		leases = append(leases, ls...)
	}
	clk.Advance(2 * time.Minute)
	var wg sync.WaitGroup
	errs := make(chan error, jobs+rescuers)
	for i, l := range leases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := stores[i%rescuers].Complete(ctx, l.Job.ID, l.Token, nil)
			if err != nil && !errors.Is(err, queue.ErrLeaseLost) {
				errs <- fmt.Errorf("Complete(%s): %w", l.Job.ID, err)
			}
		}()
	}
	for _, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				r, err := s.RescueExpired(ctx, backend.RescueRequest{Queues: []string{"q"}, Limit: 20})
				if err != nil {
					errs <- fmt.Errorf("RescueExpired: %w", err)
					return
				}
				if r.Requeued == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, s := range stores {
		s.Close()
	}
	if n := deadlocks(t, url) - before; n != 0 {
		t.Errorf("the server counted %d deadlocks; want none", n)
	}
}
