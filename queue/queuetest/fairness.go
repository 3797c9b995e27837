package queuetest

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
)

// NoisyNeighbourJobs is how many jobs the flooding tenant enqueues in the
// fairness tests in the full matrix (SLUICE_TEST_FULL=1) without the race
// detector: 10,000. Otherwise it enqueues 2,000.
const NoisyNeighbourJobs = 10000

// NoisyNeighbourBound is the fairness figure the suite asserts: after a
// tenant floods a queue, another tenant's 10 jobs, enqueued at the same
// priority, all start within the next NoisyNeighbourBound jobs leased
// (with equal weights they alternate with the flood: 2 × 10).
const NoisyNeighbourBound = 20

// AgingBound is the same figure when the flood has priority 0, the other
// tenant's jobs priority 5 and the queue ages by AgingStep: 5 × AgingStep
// rounds, then 2 × 10 alternating.
const (
	AgingStep  = 20
	AgingBound = 5*AgingStep + 2*10
)

func noisyJobs() int { return testutil.Size(2000, NoisyNeighbourJobs) }

func testFairness(t *testing.T, f Factory) {
	runTests(t, f, []test{
		{"NoisyNeighbour", needs(queue.CapTenants), testNoisyNeighbour},
		{"Weights", needs(queue.CapTenants), testWeights},
		{"PriorityWithoutAging", needs(queue.CapTenants), testPriorityStrict},
		{"Aging", needs(queue.CapTenants), testAging},
		{"LimitedFlood", needs(queue.CapTenants), testLimitedFlood},
	})
}

// flood enqueues n jobs of tenant at priority prio in batches.
func (h *Harness) flood(t *testing.T, q, tenant string, n, prio int) {
	t.Helper()
	batch := make([]queue.JobSpec, 0, 500)
	for i := 0; i < n; i++ {
		batch = append(batch, queue.JobSpec{Queue: q, Kind: "k", Tenant: tenant, Priority: prio})
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := h.Client.EnqueueBatch(context.Background(), batch); err != nil {
				t.Fatalf("EnqueueBatch: %v", err)
			}
			batch = batch[:0]
		}
	}
}

// startsUntil leases (and completes) one job at a time until every job
// of tenant that is in want has started, and returns how many jobs were
// leased; it fails after limit leases.
func (h *Harness) startsUntil(t *testing.T, q string, want map[string]bool, limit int) int {
	t.Helper()
	left := len(want)
	for n := 1; n <= limit; n++ {
		ls := h.lease(t, 1, q)
		if len(ls) == 0 {
			t.Fatalf("queue %s ran dry after %d leases with %d jobs not started", q, n-1, left)
		}
		h.complete(t, ls[0])
		if want[ls[0].Job.ID] {
			left--
			if left == 0 {
				return n
			}
		}
	}
	t.Fatalf("%d of %d jobs had not started after %d leases", left, len(want), limit)
	return 0
}

func (h *Harness) enqueueSet(t *testing.T, n int, s queue.JobSpec) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for i := 0; i < n; i++ {
		out[h.enqueue(t, s).ID] = true
	}
	return out
}

// testNoisyNeighbour: tenant A floods, a worker is through the first 100
// of A's jobs, then tenant B enqueues 10 jobs at the same priority: B's
// jobs all start within the next NoisyNeighbourBound leases.
func testNoisyNeighbour(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needTenants(t)
	h.flood(t, QueueQ, "a", noisyJobs(), 0)
	for i := 0; i < 100; i++ {
		h.complete(t, h.leaseOne(t, QueueQ))
	}
	b := h.enqueueSet(t, 10, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "b"})
	n := h.startsUntil(t, QueueQ, b, noisyJobs())
	t.Logf("tenant b's 10 jobs all started within %d leases after a's flood of %d", n, noisyJobs())
	if n > NoisyNeighbourBound {
		t.Fatalf("b's jobs took %d leases to start, want at most %d", n, NoisyNeighbourBound)
	}
}

// testWeights: a tenant of weight 3 starts three jobs for each one of a
// tenant of weight 1 while both have work.
func testWeights(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needTenants(t)
	h.setTenant(t, "heavy", queue.TenantConfig{Weight: 3})
	h.flood(t, QueueQ, "light", 200, 0)
	h.flood(t, QueueQ, "heavy", 200, 0)
	got := map[string]int{}
	for i := 0; i < 80; i++ {
		l := h.leaseOne(t, QueueQ)
		got[l.Job.Tenant]++
		h.complete(t, l)
	}
	if got["heavy"] != 60 || got["light"] != 20 {
		t.Fatalf("of 80 starts heavy had %d, light %d; want 60 and 20", got["heavy"], got["light"])
	}
}

// testPriorityStrict: without aging a lower priority number always goes
// first, whatever the tenant.
func testPriorityStrict(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needTenants(t)
	h.flood(t, QueueQ, "a", 300, 0)
	b := h.enqueueSet(t, 10, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "b", Priority: 5})
	for i := 0; i < 300; i++ {
		l := h.leaseOne(t, QueueQ)
		if b[l.Job.ID] {
			t.Fatalf("lease %d took b's priority-5 job before a's priority-0 flood was done", i+1)
		}
		h.complete(t, l)
	}
	if n := h.startsUntil(t, QueueQ, b, 10); n != 10 {
		t.Fatalf("b's jobs took %d leases after the flood, want 10", n)
	}
}

// testAging: with an aging step, the flood's priority-0 jobs cannot starve
// another tenant's priority-5 jobs: they all start within AgingBound.
func testAging(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needTenants(t)
	if err := h.Client.SetAging(context.Background(), QueueQ, AgingStep); err != nil {
		t.Fatal(err)
	}
	h.flood(t, QueueQ, "a", noisyJobs(), 0)
	for i := 0; i < 100; i++ {
		h.complete(t, h.leaseOne(t, QueueQ))
	}
	b := h.enqueueSet(t, 10, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "b", Priority: 5})
	n := h.startsUntil(t, QueueQ, b, noisyJobs())
	t.Logf("with aging step %d, b's 10 priority-5 jobs all started within %d leases", AgingStep, n)
	if n > AgingBound {
		t.Fatalf("b's jobs took %d leases, want at most %d", n, AgingBound)
	}
	if n < 5*AgingStep {
		t.Fatalf("b's jobs took %d leases, want at least %d: priority 5 must still wait 5 steps", n, 5*AgingStep)
	}
}

// testLimitedFlood: a flooding tenant held by its limit leaves the queue
// to others; its waiting jobs do not slow their Lease.
func testLimitedFlood(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	h.needTenants(t)
	h.setTenant(t, "a", queue.TenantConfig{Limit: 5})
	h.flood(t, QueueQ, "a", noisyJobs(), 0)
	h.wantTenant(t, "a", 5, int64(noisyJobs()-5), 0)
	held := h.lease(t, 10, QueueQ) // a's five; a is then full
	if len(held) != 5 {
		t.Fatalf("leased %d of a's jobs, want 5", len(held))
	}
	b := h.enqueueSet(t, 10, queue.JobSpec{Queue: QueueQ, Kind: "k", Tenant: "b", Priority: 9})
	got := h.lease(t, 20, QueueQ)
	for _, l := range got {
		if !b[l.Job.ID] {
			t.Fatalf("Lease handed out %s of tenant %s, over a's limit", l.Job.ID, l.Job.Tenant)
		}
	}
	if len(got) != 10 {
		t.Fatalf("leased %d of b's jobs, want all 10", len(got))
	}
}
