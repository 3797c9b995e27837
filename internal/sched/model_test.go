package sched

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// at is t0 plus d.
func at(d time.Duration) time.Time { return t0.Add(d) }

func enqueue(t *testing.T, m *Model, now time.Time, specs ...queue.JobSpec) []ID {
	t.Helper()
	res, err := m.Enqueue(now, specs)
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	out := make([]ID, len(res))
	for i, r := range res {
		out[i] = r.ID
	}
	return out
}

func job(tenant string) queue.JobSpec { return queue.JobSpec{Queue: "q", Kind: "k", Tenant: tenant} }

func inGroup(tenant, group string) queue.JobSpec {
	s := job(tenant)
	s.Group = group
	return s
}

// lease leases up to max jobs of queue q at now and returns their ids.
func lease(m *Model, now time.Time, max int) []ID {
	var out []ID
	for _, l := range m.Lease(now, backend.LeaseRequest{Queues: []string{"q"}, Max: max, LeaseFor: time.Minute}) {
		out = append(out, l.ID)
	}
	return out
}

func state(t *testing.T, m *Model, id ID) queue.State {
	t.Helper()
	j, ok := m.Job(id)
	if !ok {
		t.Fatalf("job %d: gone", id)
	}
	return j.State
}

func wantStates(t *testing.T, m *Model, want map[ID]queue.State) {
	t.Helper()
	for id, st := range want {
		if got := state(t, m, id); got != st {
			t.Errorf("job %d: state %s, want %s", id, got, st)
		}
	}
}

// complete completes every job leased now.
func complete(t *testing.T, m *Model, now time.Time, ids ...ID) {
	t.Helper()
	for _, id := range ids {
		j, _ := m.Job(id)
		if err := m.Complete(now, id, j.Lease); err != nil {
			t.Fatalf("Complete(%d): %v", id, err)
		}
	}
}

func TestFairOrder(t *testing.T) {
	cases := []struct {
		name    string
		weights map[string]int
		specs   []string // tenants, in enqueue order
		want    []ID     // lease order
	}{
		// A flood of a goes first only until b arrives: b is next in
		// line, then they take turns.
		{"newcomer next in line", nil, []string{"a", "a", "a", "b", "b"}, []ID{1, 4, 2, 5, 3}},
		{"weights", map[string]int{"a": 2}, []string{"a", "a", "a", "a", "b", "b"}, []ID{1, 5, 2, 3, 6, 4}},
		{"no tenant is one more tenant", nil, []string{"a", "a", "", ""}, []ID{1, 3, 2, 4}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := New()
			for n, w := range c.weights {
				m.SetTenant(t0, n, queue.TenantConfig{Weight: w})
			}
			for _, tn := range c.specs {
				enqueue(t, m, t0, job(tn))
			}
			var got []ID
			for range c.specs {
				got = append(got, lease(m, t0, 1)...)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("lease order %v, want %v", got, c.want)
			}
		})
	}
}

func TestAgingLetsLowPrioritiesThrough(t *testing.T) {
	m := New()
	m.SetAging("q", 1)
	low := job("a")
	low.Priority = 2
	enqueue(t, m, t0, low)
	for range 4 {
		enqueue(t, m, t0, job("b"))
	}
	// With step 1 the priority-2 job gains a level per round: it starts
	// after two of b's jobs, not after all of them.
	if got, want := lease(m, t0, 5), []ID{2, 3, 1, 4, 5}; !slices.Equal(got, want) {
		t.Errorf("lease order %v, want %v", got, want)
	}
}

func TestLimitHoldsAndReleasesBestFirst(t *testing.T) {
	m := New()
	m.SetTenant(t0, "a", queue.TenantConfig{Limit: 1})
	hi := job("a")
	ids := enqueue(t, m, t0, job("a"), job("a"), hi)
	wantStates(t, m, map[ID]queue.State{ids[0]: queue.StatePending, ids[1]: queue.StateWaiting, ids[2]: queue.StateWaiting})
	got := lease(m, t0, 3)
	if !slices.Equal(got, ids[:1]) {
		t.Fatalf("leased %v, want %v", got, ids[:1])
	}
	complete(t, m, t0, ids[0])
	wantStates(t, m, map[ID]queue.State{ids[1]: queue.StatePending, ids[2]: queue.StateWaiting})
	// A higher limit releases the rest at once.
	m.SetTenant(t0, "a", queue.TenantConfig{Limit: 5})
	wantStates(t, m, map[ID]queue.State{ids[2]: queue.StatePending})
}

func TestLeaseHoldsJobsOverALoweredLimit(t *testing.T) {
	m := New()
	ids := enqueue(t, m, t0, job("a"), job("a"), job("a"))
	m.SetTenant(t0, "a", queue.TenantConfig{Limit: 1})
	if got := lease(m, t0, 3); !slices.Equal(got, ids[:1]) {
		t.Fatalf("leased %v, want %v", got, ids[:1])
	}
	wantStates(t, m, map[ID]queue.State{ids[1]: queue.StateWaiting, ids[2]: queue.StateWaiting})
}

func TestBacklog(t *testing.T) {
	m := New()
	m.SetTenant(t0, "a", queue.TenantConfig{Limit: 1, Backlog: 2})
	enqueue(t, m, t0, job("a"), job("a"))
	later := job("a")
	later.RunAt = at(time.Hour) // a delayed job does not count until due
	enqueue(t, m, t0, later)
	_, err := m.Enqueue(t0, []queue.JobSpec{job("b"), job("a")})
	var full *queue.BacklogFullError
	if !errors.As(err, &full) || *full != (queue.BacklogFullError{Tenant: "a", Backlog: 2, Cap: 2}) {
		t.Fatalf("Enqueue over the backlog: %v, want a *BacklogFullError for a at 2 of 2", err)
	}
	if n := len(m.Jobs()); n != 3 {
		t.Errorf("%d jobs after a refused batch, want 3: nothing of the batch is stored", n)
	}
}

func TestMaxWait(t *testing.T) {
	m := New()
	m.SetTenant(t0, "a", queue.TenantConfig{Limit: 1, MaxWait: time.Second})
	ids := enqueue(t, m, t0, job("a"), job("a"))
	lease(m, t0, 1)
	lease(m, at(999*time.Millisecond), 1)
	wantStates(t, m, map[ID]queue.State{ids[1]: queue.StateWaiting})
	lease(m, at(time.Second), 1)
	wantStates(t, m, map[ID]queue.State{ids[1]: queue.StateFailed})
}

func TestPause(t *testing.T) {
	m := New()
	ids := enqueue(t, m, t0, job("a"), job("b"))
	until, err := m.Pause(t0, queue.TenantScope("a"), time.Second)
	if err != nil || !until.Equal(at(time.Second)) {
		t.Fatalf("Pause = %s, %v", until, err)
	}
	wantStates(t, m, map[ID]queue.State{ids[0]: queue.StateWaiting, ids[1]: queue.StatePending})
	// A shorter pause keeps the later end in force.
	if until, _ := m.Pause(t0, queue.TenantScope("a"), time.Millisecond); !until.Equal(at(time.Second)) {
		t.Errorf("a shorter pause: end %s, want %s", until, at(time.Second))
	}
	// The end takes effect at the next Lease, not before.
	_ = m.Complete(at(time.Second), ids[1], 0)
	wantStates(t, m, map[ID]queue.State{ids[0]: queue.StateWaiting})
	if got := lease(m, at(time.Second), 2); !slices.Equal(got, ids) {
		t.Errorf("leased %v after the pause, want %v", got, ids)
	}
}

func TestResumeReleasesAtOnce(t *testing.T) {
	m := New()
	ids := enqueue(t, m, t0, inGroup("", "g"))
	if _, err := m.Pause(t0, queue.GroupScope("g"), time.Hour); err != nil {
		t.Fatal(err)
	}
	wantStates(t, m, map[ID]queue.State{ids[0]: queue.StateWaiting})
	if until, err := m.Pause(t0, queue.GroupScope("g"), 0); err != nil || !until.IsZero() {
		t.Fatalf("resume = %s, %v", until, err)
	}
	wantStates(t, m, map[ID]queue.State{ids[0]: queue.StatePending})
	if _, err := m.Pause(t0, queue.GroupScope("nope"), time.Hour); !errors.Is(err, queue.ErrGroupNotFound) {
		t.Errorf("pausing an unknown group: %v, want ErrGroupNotFound", err)
	}
}

func TestGroupLimits(t *testing.T) {
	cases := []struct {
		name string
		spec queue.GroupSpec
		// leases at t0, and at t0 + 1s after completing those of t0
		first, second []ID
	}{
		{"max concurrency", queue.GroupSpec{ID: "g", MaxConcurrency: 2}, []ID{1, 2}, []ID{3}},
		{"crawl delay", queue.GroupSpec{ID: "g", MinInterval: time.Second}, []ID{1}, []ID{2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := New()
			if err := m.CreateGroup(t0, c.spec); err != nil {
				t.Fatal(err)
			}
			enqueue(t, m, t0, inGroup("", "g"), inGroup("", "g"), inGroup("", "g"))
			got := lease(m, t0, 3)
			if !slices.Equal(got, c.first) {
				t.Fatalf("first lease %v, want %v", got, c.first)
			}
			complete(t, m, t0, got...)
			if c.spec.MinInterval > 0 {
				if got := lease(m, at(time.Second-time.Microsecond), 3); len(got) > 0 {
					t.Fatalf("leased %v inside the crawl delay", got)
				}
			}
			if got := lease(m, at(time.Second), 3); !slices.Equal(got, c.second) {
				t.Errorf("second lease %v, want %v", got, c.second)
			}
		})
	}
}

func TestGroupCompletesOnce(t *testing.T) {
	m := New()
	spec := queue.GroupSpec{ID: "g", Tenant: "a", CompletionKind: "done", CompletionQueue: "q"}
	if err := m.CreateGroup(t0, spec); err != nil {
		t.Fatal(err)
	}
	ids := enqueue(t, m, t0, inGroup("", "g"), inGroup("", "g"))
	lease(m, t0, 2)
	complete(t, m, t0, ids[0])
	if _, c, _ := m.Group(t0, "g"); c != 0 {
		t.Fatalf("completion job %d with a job still running", c)
	}
	j, _ := m.Job(ids[1])
	if _, err := m.Fail(t0, ids[1], j.Lease, backend.Failure{Permanent: true}); err != nil {
		t.Fatal(err)
	}
	p, c, _ := m.Group(t0, "g")
	if !p.Done || c == 0 {
		t.Fatalf("group after its last job: done %v, completion job %d", p.Done, c)
	}
	cj, _ := m.Job(c)
	var rep queue.CompletionReport
	if err := json.Unmarshal(cj.Payload, &rep); err != nil || rep != (queue.CompletionReport{Group: "g", Total: 2, Completed: 1, Failed: 1}) {
		t.Errorf("report %+v (%v)", rep, err)
	}
	if cj.Tenant != "a" || cj.State != queue.StatePending || cj.Completes != "g" {
		t.Errorf("completion job %+v", cj)
	}
	// Nothing brings it back: a cancel changes nothing, a new job is
	// refused, and no second completion job appears.
	if err := m.CancelGroup(t0, "g"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Enqueue(t0, []queue.JobSpec{inGroup("", "g")}); !errors.Is(err, queue.ErrGroupClosed) {
		t.Errorf("enqueue into a done group: %v, want ErrGroupClosed", err)
	}
	if n := len(m.Jobs()); n != 3 {
		t.Errorf("%d jobs, want 3", n)
	}
}

func TestCancelGroup(t *testing.T) {
	m := New()
	if err := m.CreateGroup(t0, queue.GroupSpec{ID: "g", CompletionKind: "done", CompletionQueue: "q", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	ids := enqueue(t, m, t0, inGroup("", "g"), inGroup("", "g"))
	lease(m, t0, 1)
	if err := m.CancelGroup(t0, "g"); err != nil {
		t.Fatal(err)
	}
	j, _ := m.Job(ids[0])
	if j.State != queue.StateActive || !j.CancelRequested || state(t, m, ids[1]) != queue.StateCancelled {
		t.Fatalf("after CancelGroup: %s (cancel requested %v), %s", j.State, j.CancelRequested, state(t, m, ids[1]))
	}
	// The running job's end completes the group.
	if st, _ := m.Requeue(t0, ids[0], j.Lease); st != queue.StateCancelled {
		t.Errorf("requeue of a cancelled job: %s", st)
	}
	p, c, _ := m.Group(t0, "g")
	cj, _ := m.Job(c)
	var rep queue.CompletionReport
	_ = json.Unmarshal(cj.Payload, &rep)
	if !p.Done || !rep.CancelRequested || rep.Cancelled != 2 {
		t.Errorf("group %+v, report %+v", p, rep)
	}
}

func TestGroupTTL(t *testing.T) {
	m := New()
	if err := m.CreateGroup(t0, queue.GroupSpec{ID: "g", TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	ids := enqueue(t, m, t0, inGroup("", "g"))
	if _, err := m.Pause(t0, queue.QueueScope("q"), time.Hour); err != nil {
		t.Fatal(err)
	}
	lease(m, at(time.Second), 1)
	p, _, _ := m.Group(at(time.Second), "g")
	if state(t, m, ids[0]) != queue.StateCancelled || !p.CancelRequested || !p.Done {
		t.Errorf("after the TTL: job %s, group %+v", state(t, m, ids[0]), p)
	}
}

func TestRescue(t *testing.T) {
	m := New()
	ids := enqueue(t, m, t0, job("a"), job("a"))
	lease(m, t0, 2)
	_, _ = m.Cancel(t0, ids[1])
	got := m.RescueExpired(at(time.Minute), backend.RescueRequest{MaxStalls: 1})
	if got != (backend.RescueResult{}) {
		t.Fatalf("rescued %+v at the deadline, want none: a lease ends after it", got)
	}
	got = m.RescueExpired(at(time.Minute+1), backend.RescueRequest{MaxStalls: 2})
	if got != (backend.RescueResult{Requeued: 1, Cancelled: 1}) {
		t.Errorf("rescued %+v", got)
	}
	j, _ := m.Job(ids[0])
	if j.State != queue.StatePending || j.Attempt != 0 || j.Stalls != 1 {
		t.Errorf("rescued job %+v", j)
	}
	if err := m.Complete(at(time.Minute), ids[0], 1); !errors.Is(err, queue.ErrLeaseLost) {
		t.Errorf("Complete with the old lease: %v, want ErrLeaseLost", err)
	}
}

// TestChoices checks that an order the contract leaves open is reported:
// two groups completing in one rescue enqueue two completion jobs in an
// order a backend may choose.
func TestChoices(t *testing.T) {
	m := New()
	for _, g := range []string{"g1", "g2"} {
		if err := m.CreateGroup(t0, queue.GroupSpec{ID: g, CompletionKind: "done", CompletionQueue: "q"}); err != nil {
			t.Fatal(err)
		}
	}
	ids := enqueue(t, m, t0, inGroup("", "g1"), inGroup("", "g2"))
	lease(m, t0, 2)
	for _, id := range ids {
		_, _ = m.Cancel(t0, id)
	}
	if len(m.Choices()) != 0 {
		t.Fatalf("a cancel made choices: %v", m.Choices())
	}
	m.RescueExpired(at(time.Hour), backend.RescueRequest{})
	if len(m.Choices()) == 0 {
		t.Error("two groups completed in one rescue, and no choice was reported")
	}
}

// TestStaleWake checks that a pause cut short still fills its scope at
// its old end, as the backends do, and that Timers shows that instant.
func TestStaleWake(t *testing.T) {
	m := New()
	if _, err := m.Pause(t0, queue.TenantScope("a"), time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Pause(t0, queue.TenantScope("a"), 0); err != nil {
		t.Fatal(err)
	}
	var wakes []time.Time
	for _, tm := range m.Timers(t0) {
		if tm.Kind == TimerWake {
			wakes = append(wakes, tm.At)
		}
	}
	if !slices.Equal(wakes, []time.Time{at(time.Second)}) {
		t.Errorf("wakes %v, want the old end %s", wakes, at(time.Second))
	}
}
