package sched

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// ID is a job's sequence in the model: ids are handed out in enqueue
// order, starting at 1, and give the fair order its last tie-break.
type ID int64

// Job is a job as the model sees it.
type Job struct {
	queue.JobSpec
	ID              ID
	State           queue.State
	Attempt, Stalls int
	CancelRequested bool
	// RunAt is when a scheduled or retrying job becomes ready.
	RunAt time.Time
	// Lease numbers the lease of an active job (0 when not active); every
	// Lease call hands out new numbers, the model's lease tokens.
	Lease      int64
	LeaseUntil time.Time
	// WaitUntil is the MaxWait deadline of a waiting job; zero for none.
	WaitUntil  time.Time
	CreatedAt  time.Time
	FinishedAt time.Time
	// Tagged says the job has its fair place (Start, Band, Rank), given
	// when it first became ready and kept for life.
	Tagged            bool
	Start, Band, Rank int64
	// Completes names the group this job is the completion job of.
	Completes string
}

// fairCmp orders ready jobs: by band, then rank, then sequence.
func fairCmp(a, b *Job) int {
	return cmp.Or(cmp.Compare(a.Band, b.Band), cmp.Compare(a.Rank, b.Rank), cmp.Compare(a.ID, b.ID))
}

type queueState struct {
	vtime       int64
	aging       int
	pausedUntil time.Time
	finish      map[string]int64 // finish tag per tenant ("" for none)
}

type tenantState struct {
	own         queue.TenantConfig
	pausedUntil time.Time
	// settings is set once the tenant had settings or a pause of its
	// own: it is listed from then on.
	settings bool
	// wakeAt is when the tenant is next filled by a Lease: the end of a
	// pause that held it back (zero: none).
	wakeAt time.Time
}

type groupState struct {
	spec                           queue.GroupSpec
	createdAt, deadline, doneAt    time.Time
	lastStart, pausedUntil         time.Time
	cancelRequested, done, started bool
	// wakeAt is when the group is next filled by a Lease: the end of a
	// pause or crawl delay that held it back (zero: none).
	wakeAt     time.Time
	completion ID
	// deleted counts the group's finished jobs the cleaner deleted: a
	// group's progress outlives its jobs.
	deleted map[queue.State]int64
}

// Model is the scheduler's state. The zero value is not usable; call New.
// A Model is not safe for concurrent use.
type Model struct {
	seq      ID
	leases   int64
	jobs     map[ID]*Job
	queues   map[string]*queueState
	tenants  map[string]*tenantState
	defaults queue.TenantConfig
	groups   map[string]*groupState

	// variant runs every order the contract leaves open the other way
	// (see the package doc); step is the bookkeeping of the running
	// operation; choices what the last operation left open.
	variant bool
	step    *step
	choices []Choice
}

// New returns an empty model: no jobs, built-in tenant defaults.
func New() *Model {
	return &Model{
		jobs: map[ID]*Job{}, queues: map[string]*queueState{},
		tenants: map[string]*tenantState{}, groups: map[string]*groupState{},
	}
}

// Clone returns a deep copy of m.
func (m *Model) Clone() *Model {
	c := &Model{
		seq: m.seq, leases: m.leases, defaults: m.defaults, variant: m.variant,
		jobs: make(map[ID]*Job, len(m.jobs)), queues: make(map[string]*queueState, len(m.queues)),
		tenants: make(map[string]*tenantState, len(m.tenants)), groups: make(map[string]*groupState, len(m.groups)),
		choices: slices.Clone(m.choices),
	}
	for id, j := range m.jobs {
		cp := *j
		cp.Payload = slices.Clone(j.Payload)
		c.jobs[id] = &cp
	}
	for n, q := range m.queues {
		cp := *q
		cp.finish = maps.Clone(q.finish)
		c.queues[n] = &cp
	}
	for n, t := range m.tenants {
		cp := *t
		c.tenants[n] = &cp
	}
	for n, g := range m.groups {
		cp := *g
		cp.spec.CompletionPayload = slices.Clone(g.spec.CompletionPayload)
		cp.deleted = maps.Clone(g.deleted)
		c.groups[n] = &cp
	}
	return c
}

// sorted returns the jobs for which keep is true, in sequence order.
func (m *Model) sorted(keep func(j *Job) bool) []*Job {
	var out []*Job
	for _, j := range m.jobs {
		if keep(j) {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b *Job) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func (m *Model) queue(name string) *queueState {
	q, ok := m.queues[name]
	if !ok {
		q = &queueState{finish: map[string]int64{}}
		m.queues[name] = q
	}
	return q
}

func (m *Model) tenant(name string) *tenantState {
	t, ok := m.tenants[name]
	if !ok {
		t = &tenantState{}
		m.tenants[name] = t
	}
	return t
}

// effective is what applies to a tenant: its own settings over the
// defaults over the built-in ones. Jobs without a tenant have no limits.
func (m *Model) effective(name string) queue.TenantConfig {
	if name == "" {
		return queue.TenantConfig{Limit: queue.Unlimited, Weight: queue.DefaultWeight, Backlog: queue.Unlimited}
	}
	var own queue.TenantConfig
	if t, ok := m.tenants[name]; ok {
		own = t.own
	}
	return own.Effective(m.defaults)
}

// counts is a scope's jobs per state.
type counts map[queue.State]int64

func (c counts) admitted() int64 { return c[queue.StatePending] + c[queue.StateActive] }

func (c counts) unfinished() int64 {
	return c[queue.StateScheduled] + c[queue.StatePending] + c[queue.StateWaiting] +
		c[queue.StateActive] + c[queue.StateRetrying]
}

func (c counts) total() int64 {
	return c.unfinished() + c[queue.StateCompleted] + c[queue.StateFailed] + c[queue.StateCancelled]
}

func (m *Model) tenantCounts(name string) counts {
	c := counts{}
	for _, j := range m.jobs {
		if j.Tenant == name && !j.State.Final() {
			c[j.State]++
		}
	}
	return c
}

// groupCounts counts a group's jobs in every state, the deleted finished
// ones included.
func (m *Model) groupCounts(id string) counts {
	c := counts{}
	if g, ok := m.groups[id]; ok {
		maps.Copy(c, g.deleted)
	}
	for _, j := range m.jobs {
		if j.Group == id {
			c[j.State]++
		}
	}
	return c
}

// waiting returns the scope's waiting jobs, best first.
func (m *Model) waiting(in func(j *Job) bool) []*Job {
	out := m.sorted(func(j *Job) bool { return j.State == queue.StateWaiting && in(j) })
	slices.SortFunc(out, fairCmp)
	return out
}
