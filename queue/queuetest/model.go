package queuetest

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/sched"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
)

// The model test drives a backend and the scheduler's model
// (internal/sched) through the same random steps and compares everything
// the backend reports after each step: every job's state, attempts and
// times, each queue's counts, each tenant's and group's counts and
// settings, the tenant list, the jobs each Lease hands out and which group
// completion jobs exist.
//
// Its shape keeps it to what the contract decides:
//   - a step whose outcome depends on an order the contract leaves open
//     (the model's Choices) is not taken;
//   - a Lease of modelQ1 follows every move of the clock, so a pause or
//     crawl delay that ended is taken in before any other step (SQLite
//     fills a scope on more transitions than Redis does, see
//     internal/sched);
//   - every delay and pause the driver picks ends at an instant no other
//     work is due at;
//   - priorities keep the two queues apart (modelQ1 0-2, aging only there;
//     modelQ2 3-4) and the completion tenant runs nothing else: the stores
//     break ties between queues in a scope's waiting jobs differently (see
//     internal/sched's package doc for why);
//   - Cleanup runs on modelQ2, which holds no group's jobs, and keeps
//     cancelled jobs (so done groups stay).

// The test's queues, tenants and groups.
const (
	modelQ1         = "mq1"
	modelQ2         = "mq2"
	modelCompletion = "tc"
	modelKind       = "k"
	modelDone       = "done"
	modelMaxStalls  = 2
	// modelMaxJobs bounds the unfinished jobs: the stores' release and
	// lease steps look at a bounded number of jobs per call.
	modelMaxJobs = 40
)

var (
	modelTenants    = []string{"t1", "t2", "t3", ""}
	modelAllTenants = []string{"t1", "t2", "t3", modelCompletion}
	modelQueues     = []string{modelQ1, modelQ2}
)

// RunModel runs the model test on backends made by f, and the cases it
// found that are worth keeping as plain tests. SLUICE_MODEL_SEED replays
// a run; SLUICE_MODEL_STEPS sets its length. Run calls it.
func RunModel(t *testing.T, f Factory) {
	runTests(t, f, []test{
		{"Random", needs(queue.CapTenants, queue.CapGroups, queue.CapDelay, queue.CapClockDelays, queue.CapPriority,
			queue.CapList, queue.CapCancelPending), testModelRandom},
		{"GroupPauseEnded", needs(queue.CapTenants, queue.CapGroups), testGroupPauseEnded},
		{"GroupDoneBeforeTTL", needs(queue.CapTenants, queue.CapGroups, queue.CapClockDelays), testGroupDoneBeforeTTL},
	})
}

// testModelRandom is the model test: see the top of this file.
func testModelRandom(t *testing.T, f Factory) {
	h := NewHarness(t, f)
	h.needTenants(t)
	h.needGroups(t)
	t.Parallel()
	seed := modelSeed(t)
	r := newModelRun(t, h, seed)
	defer func() {
		if t.Failed() {
			t.Logf("model run seed %d (replay: SLUICE_MODEL_SEED=%d); last steps:\n%s", seed, seed, r.history())
		}
	}()
	steps := modelSteps(t)
	for r.step = 1; r.step <= steps && !t.Failed(); r.step++ {
		r.random()
	}
	if !t.Failed() {
		r.drain()
	}
	t.Logf("seed %d: %d steps, %d taken, %d left out as open %v", seed, steps, r.taken, r.skipped, r.why)
}

// modelSeed is SLUICE_MODEL_SEED, or a fresh random seed.
func modelSeed(t *testing.T) uint64 {
	if s := os.Getenv("SLUICE_MODEL_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SLUICE_MODEL_SEED=%q: %v", s, err)
		}
		return n
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) >> 1
}

// modelSteps is SLUICE_MODEL_STEPS, or a length that runs in a few
// seconds under the race detector: 100 steps, 500 in the full matrix
// without it.
func modelSteps(t *testing.T) int {
	if s := os.Getenv("SLUICE_MODEL_STEPS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			t.Fatalf("SLUICE_MODEL_STEPS=%q: want a count", s)
		}
		return n
	}
	return testutil.Size(100, 500)
}

// modelRun is one run: the backend, the model, and how their ids and
// lease tokens correspond.
type modelRun struct {
	t    *testing.T
	h    *Harness
	ctx  context.Context
	rng  *mrand.Rand
	m    *sched.Model
	step int

	ids    map[sched.ID]string // model id → backend id
	byID   map[string]sched.ID // backend id → model id
	tokens map[int64]string    // model lease number → backend token
	held   []modelLease        // leases the workers think they hold
	dead   []modelLease        // leases lost, kept to try once more

	groups    []string        // every group named so far
	open      []string        // the groups new jobs join
	settled   map[string]bool // groups done and compared since
	nextGroup int

	taken, skipped int
	why            map[string]int // why steps were left out
	log            []string
}

type modelLease struct {
	id    sched.ID
	lease int64
}

func newModelRun(t *testing.T, h *Harness, seed uint64) *modelRun {
	return &modelRun{
		t: t, h: h, ctx: context.Background(), rng: mrand.New(mrand.NewPCG(seed, seed^0x5eed)),
		m: sched.New(), ids: map[sched.ID]string{}, byID: map[string]sched.ID{}, tokens: map[int64]string{},
		settled: map[string]bool{}, why: map[string]int{},
	}
}

func (r *modelRun) now() time.Time { return r.h.Clock.Now() }

// logf records what the step did, for the report of a failed run.
func (r *modelRun) logf(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf("step %d @%s: ", r.step, r.now().Sub(Epoch))+fmt.Sprintf(format, args...))
	if len(r.log) > 400 {
		r.log = r.log[len(r.log)-400:]
	}
}

func (r *modelRun) history() string { return strings.Join(r.log, "\n") }

// fatalf stops the run at the first difference.
func (r *modelRun) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("step %d: "+format, append([]any{r.step}, args...)...)
}

// leftOpen reports whether the operation just run on m (a copy of the model)
// made a choice the contract leaves open; such a step is not taken.
func (r *modelRun) leftOpen(m *sched.Model, what string) bool {
	if cs := m.Choices(); len(cs) > 0 {
		r.skipped++
		for _, c := range cs {
			r.why[c.String()]++
		}
		r.logf("left out %s: %v", what, cs)
		return true
	}
	return false
}

// commit adopts m, on which the step ran, as the model, and compares the
// backend with it.
func (r *modelRun) commit(m *sched.Model) {
	r.t.Helper()
	r.m = m
	r.taken++
	r.compare()
}

// modelAction is one kind of random step and its weight; it returns false
// when it found nothing to do.
type modelAction struct {
	weight int
	do     func(r *modelRun) bool
}

var modelActions = []modelAction{
	{14, (*modelRun).enqueue}, {12, (*modelRun).lease}, {10, (*modelRun).complete},
	{5, (*modelRun).fail}, {4, (*modelRun).snooze}, {2, (*modelRun).requeue},
	{3, (*modelRun).cancel}, {9, (*modelRun).advance}, {3, (*modelRun).crash},
	{3, (*modelRun).pause}, {3, (*modelRun).setTenant}, {1, (*modelRun).setAging},
	{2, (*modelRun).createGroup}, {1, (*modelRun).cancelGroup}, {1, (*modelRun).cleanup},
	{1, (*modelRun).retry}, {1, (*modelRun).stale},
}

// random takes one random step.
func (r *modelRun) random() {
	r.rotate()
	total := 0
	for _, a := range modelActions {
		total += a.weight
	}
	for range 20 {
		n := r.rng.IntN(total)
		for _, a := range modelActions {
			if n -= a.weight; n < 0 {
				if a.do(r) {
					return
				}
				break
			}
		}
	}
}

// drain resumes every scope, then finishes every job, the backend and
// the model in step: nothing may stay waiting with nothing to wait for.
func (r *modelRun) drain() {
	r.step++
	for _, s := range r.scopes() {
		r.pauseScope(s, 0)
	}
	for round := 0; round < 400 && r.unfinished() > 0 && !r.t.Failed(); round++ {
		r.step++
		for len(r.live()) > 0 {
			r.finishLease(r.live()[0], 0)
		}
		if !r.leaseFrom(modelQ1, 5) && !r.leaseFrom(modelQ2, 5) {
			r.advanceBy(time.Second)
		}
	}
	if n := r.unfinished(); n > 0 && !r.t.Failed() {
		r.t.Logf("drain stopped with %d unfinished jobs after steps left open", n)
	}
}

// unfinished counts the model's jobs not in a final state.
func (r *modelRun) unfinished() int {
	n := 0
	for _, j := range r.m.Jobs() {
		if !j.State.Final() {
			n++
		}
	}
	return n
}

// scopes lists every tenant, group and queue scope of the test.
func (r *modelRun) scopes() []queue.Scope {
	var out []queue.Scope
	for _, n := range modelAllTenants {
		out = append(out, queue.TenantScope(n))
	}
	for _, g := range r.open {
		out = append(out, queue.GroupScope(g))
	}
	for _, q := range modelQueues {
		out = append(out, queue.QueueScope(q))
	}
	return out
}
