package queuetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

// RunTenants runs the tenant scheduling tests (limits, the waiting state,
// backlog, pauses, fairness). Run calls it; it skips backends without
// queue.CapTenants or the backend.TenantBackend methods.
func RunTenants(t *testing.T, f Factory) {
	runTests(t, f, []test{
		{"LimitWaits", needs(queue.CapTenants), testTenantLimitWaits},
		{"ReleaseAsManyAsFree", needs(queue.CapTenants), testTenantReleaseMany},
		{"SlotFreed", needs(queue.CapTenants), testTenantSlotFreed},
		{"Defaults", needs(queue.CapTenants), testTenantDefaults},
		{"Backlog", needs(queue.CapTenants), testTenantBacklog},
		{"MaxWait", needs(queue.CapTenants), testTenantMaxWait},
		{"BackOff", needs(queue.CapTenants), testBackOff},
		{"QueuePauseInStats", needs(queue.CapTenants), testQueuePauseInStats},
		{"StartRate", needs(queue.CapTenants), testStartRate},
		{"Fairness", needs(queue.CapTenants), testFairness},
		{"LimitNeverExceeded", needs(queue.CapTenants), testTenantLimitNeverExceeded},
	})
}

// needTenants returns the backend's tenant part, or skips the test when it
// has none (the test's table declares queue.CapTenants).
func (h *Harness) needTenants(t *testing.T) backend.TenantBackend {
	t.Helper()
	h.Need(t, queue.CapTenants)
	return h.Backend.Features().Tenants
}

func (h *Harness) setTenant(t *testing.T, tenant string, cfg queue.TenantConfig) {
	t.Helper()
	if err := h.Client.SetTenant(context.Background(), tenant, cfg); err != nil {
		t.Fatalf("SetTenant(%s, %+v): %v", tenant, cfg, err)
	}
}

func (h *Harness) tenant(t *testing.T, tenant string) *queue.TenantInfo {
	t.Helper()
	info, err := h.Client.Tenant(context.Background(), tenant)
	if err != nil {
		t.Fatalf("Tenant(%s): %v", tenant, err)
	}
	return info
}

// wantTenant checks a tenant's pending, waiting and active counts.
func (h *Harness) wantTenant(t *testing.T, tenant string, pending, waiting, active int64) {
	t.Helper()
	i := h.tenant(t, tenant)
	if i.Pending != pending || i.Waiting != waiting || i.Active != active {
		t.Fatalf("tenant %s: pending %d, waiting %d, active %d; want %d, %d, %d",
			tenant, i.Pending, i.Waiting, i.Active, pending, waiting, active)
	}
}

func (h *Harness) complete(t *testing.T, l queue.Lease) {
	t.Helper()
	if err := h.Backend.Complete(context.Background(), l.Job.ID, l.Token, nil); err != nil {
		t.Fatalf("Complete(%s): %v", l.Job.ID, err)
	}
}

// testTenantLimitWaits: over its limit a tenant's jobs wait, visibly, and
// are released in priority order as slots free; another tenant is not held.
func testTenantLimitWaits(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needTenants(t)
	h.setTenant(t, "a", queue.TenantConfig{Limit: 2})
	prios := []int{5, 1, 3, 0, 4, 2}
	jobs := make([]*queue.Job, len(prios))
	for i, p := range prios {
		jobs[i] = h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "a", Priority: p})
	}
	for i, j := range jobs {
		want := queue.StateWaiting
		if i < 2 {
			want = queue.StatePending // the first two took the free slots
		}
		if j.State != want {
			t.Fatalf("job %d (priority %d) enqueued %s, want %s", i, prios[i], j.State, want)
		}
		h.wantState(t, j.ID, want)
	}
	other := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "b", Priority: 9})
	h.wantTenant(t, "a", 2, 4, 0)
	ls := h.lease(t, 10, QueueQ)
	if got, want := ids(ls), []string{jobs[1].ID, jobs[0].ID, other.ID}; !slices.Equal(sorted(got), sorted(want)) {
		t.Fatalf("Lease = %v, want %v (a's two admitted jobs and b's)", got, want)
	}
	h.wantTenant(t, "a", 0, 4, 2)
	// Each freed slot releases the best waiting job: priority 0, then 2,
	// then 3, then 4.
	for _, next := range []int{3, 5, 2, 4} {
		var l queue.Lease
		for _, x := range ls {
			if x.Job.Tenant == "a" {
				l = x
			}
		}
		h.complete(t, l)
		h.wantState(t, jobs[next].ID, queue.StatePending)
		ls = slices.DeleteFunc(ls, func(x queue.Lease) bool { return x.Job.ID == l.Job.ID })
		got := h.lease(t, 10, QueueQ)
		if len(got) != 1 || got[0].Job.ID != jobs[next].ID {
			t.Fatalf("after a slot freed Lease = %v, want [%s] (priority %d)", ids(got), jobs[next].ID, prios[next])
		}
		ls = append(ls, got...)
	}
	h.wantTenant(t, "a", 0, 0, 2)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// testTenantReleaseMany: when room grows by n, n waiting jobs go at once.
func testTenantReleaseMany(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needTenants(t)
	ctx := context.Background()
	h.setTenant(t, "a", queue.TenantConfig{Limit: 1})
	for i := 0; i < 6; i++ {
		h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "a", Priority: 6 - i})
	}
	h.wantTenant(t, "a", 1, 5, 0)
	if err := h.Client.SetTenantLimit(ctx, "a", 4); err != nil {
		t.Fatal(err)
	}
	h.wantTenant(t, "a", 4, 2, 0)
	got := h.lease(t, 10, QueueQ)
	prio := func(ls []queue.Lease) []int {
		var p []int
		for _, l := range ls {
			p = append(p, l.Job.Priority)
		}
		slices.Sort(p)
		return p
	}
	// The first enqueued (priority 6) was admitted at once; the three
	// released are the best waiting: 1, 2, 3.
	if p := prio(got); !slices.Equal(p, []int{1, 2, 3, 6}) {
		t.Fatalf("leased priorities %v, want [1 2 3 6]", p)
	}
	// Two slots free together: two jobs released.
	h.complete(t, got[0])
	h.complete(t, got[1])
	h.wantTenant(t, "a", 2, 0, 2)
	// Lowering the limit takes nothing from running jobs, and Lease hands
	// out no more than the new limit allows.
	if err := h.Client.SetTenantLimit(ctx, "a", 1); err != nil {
		t.Fatal(err)
	}
	if got := h.lease(t, 10, QueueQ); len(got) != 0 {
		t.Fatalf("Lease over a lowered limit = %v, want none", ids(got))
	}
	h.wantTenant(t, "a", 0, 2, 2)
	info := h.tenant(t, "a")
	if info.Own.Limit != 1 || info.Effective.Limit != 1 || info.Effective.Backlog != queue.DefaultBacklog(1) {
		t.Errorf("Tenant(a) settings = own %+v effective %+v, want limit 1 and the default backlog", info.Own, info.Effective)
	}
}

// testTenantSlotFreed: every way out of active frees the tenant's slot.
func testTenantSlotFreed(t *testing.T, f Factory) {
	ctx := context.Background()
	cases := []struct {
		name string
		end  func(h *Harness, l queue.Lease) error
	}{
		{"complete", func(h *Harness, l queue.Lease) error {
			return h.Backend.Complete(ctx, l.Job.ID, l.Token, nil)
		}},
		{"fail and retry", func(h *Harness, l queue.Lease) error {
			_, err := h.Backend.Fail(ctx, l.Job.ID, l.Token, backend.Failure{Error: "x", RetryIn: time.Hour})
			return err
		}},
		{"fail for good", func(h *Harness, l queue.Lease) error {
			_, err := h.Backend.Fail(ctx, l.Job.ID, l.Token, backend.Failure{Error: "x", Permanent: true})
			return err
		}},
		{"cancel while running", func(h *Harness, l queue.Lease) error {
			if _, err := h.Backend.Cancel(ctx, l.Job.ID); err != nil {
				return err
			}
			_, err := h.Backend.Fail(ctx, l.Job.ID, l.Token, backend.Failure{Error: "cancelled"})
			return err
		}},
		{"snooze", func(h *Harness, l queue.Lease) error {
			_, err := h.Backend.Snooze(ctx, l.Job.ID, l.Token, time.Hour)
			return err
		}},
		{"lease expiry", func(h *Harness, l queue.Lease) error {
			h.Clock.Advance(testLease + time.Second)
			_, err := h.Backend.RescueExpired(ctx, backend.RescueRequest{MaxStalls: 1})
			return err
		}},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			h := NewHarness(t, f)
			h.needTenants(t)
			h.setTenant(t, "a", queue.TenantConfig{Limit: 1})
			first := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "a"})
			second := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "a"})
			l := h.leaseOne(t, QueueQ)
			if l.Job.ID != first.ID {
				t.Fatalf("leased %s, want %s", l.Job.ID, first.ID)
			}
			h.wantState(t, second.ID, queue.StateWaiting)
			if err := c.end(h, l); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			h.wantState(t, second.ID, queue.StatePending)
			if got := h.leaseOne(t, QueueQ); got.Job.ID != second.ID {
				t.Fatalf("after %s leased %s, want %s", c.name, got.Job.ID, second.ID)
			}
			if a := h.tenant(t, "a").Active; a != 1 {
				t.Fatalf("tenant active = %d, want 1", a)
			}
		})
	}
	t.Run("requeue keeps the slot for the job", func(t *testing.T) {
		t.Parallel()
		h := NewHarness(t, f)
		h.needTenants(t)
		h.setTenant(t, "a", queue.TenantConfig{Limit: 1})
		first := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "a"})
		second := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "a"})
		l := h.leaseOne(t, QueueQ)
		st, err := h.Backend.Requeue(ctx, l.Job.ID, l.Token)
		if err != nil || st != queue.StatePending {
			t.Fatalf("Requeue = %s, %v; want pending", st, err)
		}
		h.wantState(t, second.ID, queue.StateWaiting)
		if got := h.leaseOne(t, QueueQ); got.Job.ID != first.ID {
			t.Fatalf("after requeue leased %s, want %s again", got.Job.ID, first.ID)
		}
	})
}

// testTenantDefaults: the defaults apply to every tenant without its own
// setting, and raising them releases waiting jobs everywhere.
func testTenantDefaults(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needTenants(t)
	ctx := context.Background()
	if err := h.Client.SetTenantDefaults(ctx, queue.TenantConfig{Limit: 1}); err != nil {
		t.Fatal(err)
	}
	h.setTenant(t, "vip", queue.TenantConfig{Limit: queue.Unlimited})
	for _, tn := range []string{"a", "b", "vip"} {
		for i := 0; i < 3; i++ {
			h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: tn})
		}
	}
	h.wantTenant(t, "a", 1, 2, 0)
	h.wantTenant(t, "b", 1, 2, 0)
	h.wantTenant(t, "vip", 3, 0, 0)
	if err := h.Client.SetTenantDefaults(ctx, queue.TenantConfig{Limit: 2}); err != nil {
		t.Fatal(err)
	}
	h.wantTenant(t, "a", 2, 1, 0)
	h.wantTenant(t, "b", 2, 1, 0)
	// Jobs without a tenant are never limited.
	for i := 0; i < 3; i++ {
		h.wantState(t, h.enqueue(t, spec(QueueQ, "k")).ID, queue.StatePending)
	}
	if _, err := h.Client.Tenant(ctx, ""); !errors.Is(err, queue.ErrInvalidArgument) {
		t.Errorf("Tenant(\"\") = %v, want ErrInvalidArgument", err)
	}
	if err := h.Client.SetTenantLimit(ctx, "a", -5); !errors.Is(err, queue.ErrInvalidArgument) {
		t.Errorf("SetTenantLimit(-5) = %v, want ErrInvalidArgument", err)
	}
}

// testTenantBacklog: a full backlog refuses the enqueue whole; delayed and
// running jobs do not count.
func testTenantBacklog(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needTenants(t)
	ctx := context.Background()
	h.setTenant(t, "a", queue.TenantConfig{Limit: 1, Backlog: 3})
	first := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "a"})
	h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "a"})
	h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "a", RunAt: Epoch.Add(time.Hour)})
	h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "a"})
	_, err := h.Client.Enqueue(ctx, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "a"})
	var full *queue.BacklogFullError
	if !errors.Is(err, queue.ErrBacklogFull) || !errors.As(err, &full) || full.Tenant != "a" || full.Cap != 3 || full.Backlog != 3 {
		t.Fatalf("Enqueue over the backlog = %v, want a *BacklogFullError for a, 3 of 3", err)
	}
	l := h.leaseOne(t, QueueQ) // active jobs leave the backlog
	if l.Job.ID != first.ID {
		t.Fatalf("leased %s, want %s", l.Job.ID, first.ID)
	}
	batch := []queue.JobSpec{{Queue: QueueQ, Kind: "k", Tenant: "a"}, {Queue: QueueQ, Kind: "k", Tenant: "a"}}
	if _, err := h.Client.EnqueueBatch(ctx, batch); !errors.Is(err, queue.ErrBacklogFull) {
		t.Fatalf("batch of 2 with room for 1 = %v, want ErrBacklogFull", err)
	}
	h.wantTenant(t, "a", 0, 2, 1) // the refused batch stored nothing
	if _, err := h.Client.EnqueueBatch(ctx, batch[:1]); err != nil {
		t.Fatalf("one job with room for one: %v", err)
	}
	// Other tenants are not affected.
	h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "b"})
}

// testTenantMaxWait: a job that waits longer than MaxWait fails with
// ErrBacklogFull as its error.
func testTenantMaxWait(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needTenants(t)
	h.setTenant(t, "a", queue.TenantConfig{Limit: 1, MaxWait: time.Minute})
	first := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "a"})
	second := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "a"})
	l := h.leaseOne(t, QueueQ)
	if l.Job.ID != first.ID {
		t.Fatalf("leased %s, want %s", l.Job.ID, first.ID)
	}
	h.Clock.Advance(time.Minute - time.Millisecond)
	h.lease(t, 1, QueueQ)
	h.wantState(t, second.ID, queue.StateWaiting)
	h.Clock.Advance(time.Millisecond)
	if got := h.lease(t, 1, QueueQ); len(got) != 0 {
		t.Fatalf("Lease = %v, want none", ids(got))
	}
	j := h.wantState(t, second.ID, queue.StateFailed)
	if !strings.Contains(j.LastError, queue.ErrBacklogFull.Error()) || len(j.Errors) != 1 || j.FinishedAt.IsZero() {
		t.Fatalf("expired job: LastError %q, %d errors, finished %v; want ErrBacklogFull's message", j.LastError, len(j.Errors), j.FinishedAt)
	}
	h.complete(t, l)
	h.wantTenant(t, "a", 0, 0, 0)
}

// testBackOff: BackOff pauses a tenant, a group or a queue, and it resumes
// by itself or at once.
func testBackOff(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needTenants(t)
	ctx := context.Background()
	a1 := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "a"})
	b1 := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "b"})
	until, err := h.Client.BackOff(ctx, queue.TenantScope("a"), time.Minute)
	if err != nil || !sameTime(until, Epoch.Add(time.Minute)) {
		t.Fatalf("BackOff = %v, %v; want %v", until, err, Epoch.Add(time.Minute))
	}
	h.wantState(t, a1.ID, queue.StateWaiting)
	a2 := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "a"})
	if a2.State != queue.StateWaiting {
		t.Fatalf("job of a paused tenant enqueued %s, want waiting", a2.State)
	}
	if i := h.tenant(t, "a"); !sameTime(i.PausedUntil, Epoch.Add(time.Minute)) {
		t.Fatalf("Tenant(a).PausedUntil = %v", i.PausedUntil)
	}
	// A shorter back-off keeps the later end.
	if until, _ := h.Client.BackOff(ctx, queue.TenantScope("a"), time.Second); !sameTime(until, Epoch.Add(time.Minute)) {
		t.Fatalf("shorter BackOff = %v, want the minute kept", until)
	}
	if got := ids(h.lease(t, 10, QueueQ)); !slices.Equal(got, []string{b1.ID}) {
		t.Fatalf("Lease while a is paused = %v, want [%s]", got, b1.ID)
	}
	h.Clock.Advance(time.Minute)
	if got := ids(h.lease(t, 10, QueueQ)); !slices.Equal(sorted(got), sorted([]string{a1.ID, a2.ID})) {
		t.Fatalf("Lease after the pause = %v, want a's jobs", got)
	}

	// A queue: its jobs stay pending, Lease skips it; d <= 0 resumes.
	q1 := h.enqueue(t, spec("slow", "k"))
	if _, err := h.Client.BackOff(ctx, queue.QueueScope("slow"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := h.lease(t, 10, "slow"); len(got) != 0 {
		t.Fatalf("Lease on a paused queue = %v, want none", ids(got))
	}
	h.wantState(t, q1.ID, queue.StatePending)
	if until, err := h.Client.BackOff(ctx, queue.QueueScope("slow"), 0); err != nil || !until.IsZero() {
		t.Fatalf("BackOff(0) = %v, %v; want a resumed queue", until, err)
	}
	if got := ids(h.lease(t, 10, "slow")); !slices.Equal(got, []string{q1.ID}) {
		t.Fatalf("Lease after resume = %v, want [%s]", got, q1.ID)
	}
	if _, err := h.Client.BackOff(ctx, queue.Scope{Kind: "team", Name: "x"}, time.Second); !errors.Is(err, queue.ErrInvalidArgument) {
		t.Errorf("BackOff(team) = %v, want ErrInvalidArgument", err)
	}
}

// LimitTenants is how many tenants the limit test runs, with limits 1 to
// 5; each enqueues LimitJobsPerTenant jobs in the full matrix
// (SLUICE_TEST_FULL=1) without the race detector, 8 otherwise.
const (
	LimitTenants       = 50
	LimitJobsPerTenant = 20
)

// testTenantLimitNeverExceeded runs 8 workers × concurrency 20 on the real
// clock over 50 tenants with limits 1–5. Handlers record how many jobs of
// their tenant run at once, and a sampler reads the backend's active
// counts: neither may pass a tenant's limit, and every job runs once.
func testTenantLimitNeverExceeded(t *testing.T, f Factory) {
	b := f(t, clock.Real)
	h := &Harness{Backend: b, Client: queue.NewClient(b)}
	h.needTenants(t)
	ctx := context.Background()
	per := testutil.Size(8, LimitJobsPerTenant)
	limit := func(i int) int { return i%5 + 1 }
	name := func(i int) string { return fmt.Sprintf("t%02d", i) }
	var specs []queue.JobSpec
	for i := 0; i < LimitTenants; i++ {
		h.setTenant(t, name(i), queue.TenantConfig{Limit: limit(i)})
		for k := 0; k < per; k++ {
			specs = append(specs, queue.JobSpec{Queue: "lim", Kind: "k", Tenant: name(i), Priority: k % 3})
		}
	}
	rand.Shuffle(len(specs), func(i, j int) { specs[i], specs[j] = specs[j], specs[i] })
	if _, err := h.Client.EnqueueBatch(ctx, specs); err != nil {
		t.Fatal(err)
	}
	total := len(specs)
	running := make([]atomic.Int32, LimitTenants)
	peak := make([]atomic.Int32, LimitTenants)
	var runs sync.Map
	var done atomic.Int64
	all := make(chan struct{})
	handler := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		i, _ := strconv.Atoi(strings.TrimPrefix(j.Tenant, "t"))
		n := running[i].Add(1)
		for p := peak[i].Load(); n > p && !peak[i].CompareAndSwap(p, n); p = peak[i].Load() {
		}
		work := time.NewTimer(time.Millisecond) // the job's work, so that jobs overlap
		<-work.C
		running[i].Add(-1)
		v, _ := runs.LoadOrStore(j.ID, new(atomic.Int32))
		v.(*atomic.Int32).Add(1)
		if done.Add(1) == int64(total) {
			close(all)
		}
		return nil, nil
	})
	for w := 0; w < 8; w++ {
		wk := queue.NewWorker(b, queue.WorkerConfig{
			Queues: []string{"lim"}, Concurrency: 20, PollInterval: 5 * time.Millisecond, Logger: quiet,
		})
		wk.Handle("k", handler)
		testutil.Start(t, wk)
	}
	over := sampleActive(t, h, LimitTenants, name, limit, all)
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		t.Fatalf("only %d of %d jobs ran", done.Load(), total)
	}
	if msg := <-over; msg != "" {
		t.Error(msg)
	}
	for i := 0; i < LimitTenants; i++ {
		if p := peak[i].Load(); p > int32(limit(i)) {
			t.Errorf("tenant %s ran %d jobs at once, over its limit %d", name(i), p, limit(i))
		}
	}
	once := 0
	runs.Range(func(_, v any) bool {
		if v.(*atomic.Int32).Load() == 1 {
			once++
		}
		return true
	})
	if once != total {
		t.Errorf("%d of %d jobs ran exactly once", once, total)
	}
}

// sampleActive reads every tenant's active count until stop closes and
// sends the first violation of a limit it saw, or "".
func sampleActive(t *testing.T, h *Harness, n int, name func(int) string, limit func(int) int, stop <-chan struct{}) <-chan string {
	out := make(chan string, 1)
	go func() {
		tick := time.NewTicker(2 * time.Millisecond) // sample, leaving the CPU to the workers
		defer tick.Stop()
		msg := ""
		for {
			select {
			case <-stop:
				out <- msg
				return
			case <-tick.C:
			}
			for i := 0; i < n && msg == ""; i++ {
				info, err := h.Client.Tenant(context.Background(), name(i))
				if err == nil && info.Active > int64(limit(i)) {
					msg = fmt.Sprintf("tenant %s had %d active jobs, over its limit %d", name(i), info.Active, limit(i))
				}
			}
		}
	}()
	return out
}

// testStartRate: a tenant may start 2 jobs per hour (counted in a memlimit
// store on the backend's fake clock). A worker runs 2 of 5 jobs; the
// others wait, unfailed and with no attempt spent, until the hour is over.
func testStartRate(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needTenants(t)
	store := memlimit.New(memlimit.Options{Clock: h.Clock, SweepInterval: -1})
	t.Cleanup(func() { store.Close() })
	var jobs []*queue.Job
	for i := 0; i < 5; i++ {
		jobs = append(jobs, h.enqueue(t, queue.JobSpec{Queue: "rate", Kind: "k", Tenant: "a"}))
	}
	free := h.enqueue(t, queue.JobSpec{Queue: "rate", Kind: "k", Tenant: "b"})
	cfg := workerConfig("rate")
	cfg.StartRates = queue.StartRates{Store: store, Tenants: map[string]ratelimit.Limit{"a": ratelimit.PerHour(2)}}
	w := queue.NewWorker(h.Backend, cfg)
	w.Handle("k", queue.HandlerFunc(func(context.Context, *queue.Job) ([]byte, error) { return nil, nil }))
	testutil.Start(t, w)
	h.waitState(t, free.ID, queue.StateCompleted)
	countStates := func() map[queue.State]int {
		out := map[queue.State]int{}
		for _, j := range jobs {
			got := h.get(t, j.ID)
			out[got.State]++
			if got.State == queue.StateWaiting && (got.Attempt != 0 || got.LastError != "") {
				t.Fatalf("waiting job %s: attempt %d, error %q; want none spent", got.ID, got.Attempt, got.LastError)
			}
		}
		return out
	}
	waitFor := func(completed int) {
		t.Helper()
		want := fmt.Sprintf("%d completed and the rest waiting", completed)
		testutil.Eventually(t, want, func() error {
			c := countStates()
			if c[queue.StateFailed] > 0 || c[queue.StateCompleted] > completed {
				t.Fatalf("states %v, want %s", c, want)
			}
			if c[queue.StateCompleted] != completed || c[queue.StateWaiting] != 5-completed {
				return fmt.Errorf("states %v", c)
			}
			return nil
		})
	}
	waitFor(2)
	if i := h.tenant(t, "a"); i.PausedUntil.IsZero() {
		t.Fatal("tenant over its start rate is not paused")
	}
	h.Clock.Advance(time.Hour)
	waitFor(4)
	h.Clock.Advance(time.Hour)
	waitFor(5)
}
