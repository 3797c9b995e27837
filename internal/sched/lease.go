package sched

import (
	"cmp"
	"slices"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// MaxLeaseHolds is how many pending jobs one Lease may find blocked (and
// move to waiting) before its outcome is left open: the backends bound the
// candidates one call looks at, so past this a Lease may hand out fewer
// jobs than are ready.
const MaxLeaseHolds = 3

// Leased is a job a Lease handed out and the number of its lease.
type Leased struct {
	ID    ID
	Lease int64
}

// Lease does, in one step, what backend.Backend.Lease does: first the
// time-driven work (due scheduled and retrying jobs of req.Queues become
// ready; each tenant and group whose pause or crawl delay has ended
// releases the waiting jobs it has room for; waiting jobs past
// their MaxWait deadline fail with queue.ErrBacklogFull; groups past their
// TTL are cancelled), then it hands out up to req.Max pending jobs of the
// queues not paused, best first, checking each against its tenant's and
// group's limits with the jobs leased so far counted: a blocked one moves
// to waiting. req must be valid (queues, Max >= 1, LeaseFor > 0).
func (m *Model) Lease(now time.Time, req backend.LeaseRequest) []Leased {
	res, _ := m.run("Lease", now, func(m *Model) (any, error) {
		m.maintain(req.Queues)
		m.settle()
		return m.pick(req), nil
	})
	out, _ := res.([]Leased)
	return out
}

// maintain does a Lease's time-driven work, before it picks, in the order
// every backend does it.
func (m *Model) maintain(queues []string) {
	m.promote(queues)
	m.wakeScopes()
	m.expireWaits()
	// A group whose last job just failed for MaxWait is done, not
	// cancelled by a TTL that ran out in the same step: settle first.
	m.settle()
	m.expireGroups()
}

// promote makes the due scheduled and retrying jobs of queues ready, queue
// by queue in the order named, each by RunAt then sequence. A Lease
// promotes only the queues it leases from.
func (m *Model) promote(queues []string) {
	now := m.now()
	var seen []string
	for _, q := range queues {
		if slices.Contains(seen, q) {
			continue
		}
		seen = append(seen, q)
		due := m.sorted(func(j *Job) bool {
			return j.Queue == q && (j.State == queue.StateScheduled || j.State == queue.StateRetrying) &&
				!j.RunAt.After(now)
		})
		slices.SortStableFunc(due, func(a, b *Job) int { return a.RunAt.Compare(b.RunAt) })
		for _, j := range due {
			m.place(j)
		}
	}
}

// wakeScopes fills the tenants, then the groups, whose wake has come (by
// wake, then name): that is when the end of a pause or crawl delay takes
// effect.
func (m *Model) wakeScopes() {
	now := m.now()
	type woken struct {
		at   time.Time
		name string
	}
	var ts, gs []woken
	for n, t := range m.tenants {
		if !t.wakeAt.IsZero() && !t.wakeAt.After(now) {
			ts = append(ts, woken{t.wakeAt, n})
			t.wakeAt = time.Time{}
		}
	}
	for id, g := range m.groups {
		if !g.wakeAt.IsZero() && !g.wakeAt.After(now) {
			gs = append(gs, woken{g.wakeAt, id})
			g.wakeAt = time.Time{}
		}
	}
	order := func(a, b woken) int { return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.name, b.name)) }
	slices.SortFunc(ts, order)
	slices.SortFunc(gs, order)
	for _, t := range ts {
		m.fillTenant(t.name)
	}
	for _, g := range gs {
		m.fillGroup(g.name)
	}
}

// expireWaits fails the waiting jobs whose MaxWait deadline has come, by
// deadline then sequence (the variant: then queue, as Redis names them),
// and the step settles once at the end.
func (m *Model) expireWaits() {
	now := m.now()
	list := m.sorted(func(j *Job) bool {
		return j.State == queue.StateWaiting && !j.WaitUntil.IsZero() && !j.WaitUntil.After(now)
	})
	slices.SortStableFunc(list, func(a, b *Job) int {
		if m.variant {
			return cmp.Or(a.WaitUntil.Compare(b.WaitUntil), cmp.Compare(a.Queue, b.Queue))
		}
		return a.WaitUntil.Compare(b.WaitUntil)
	})
	for _, j := range list {
		m.finish(j, queue.StateFailed)
	}
}

// expireGroups cancels the groups whose TTL has run out, by deadline.
func (m *Model) expireGroups() {
	now := m.now()
	var ids []string
	for id, g := range m.groups {
		if !g.deadline.IsZero() && !g.deadline.After(now) {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int {
		return cmp.Or(m.groups[a].deadline.Compare(m.groups[b].deadline), cmp.Compare(a, b))
	})
	for _, id := range ids {
		m.cancelGroup(id)
		m.settleEach()
	}
}

// candidates lists the pending jobs of the queues not paused, best first:
// by (band, rank, sequence) across queues (the variant: the queues take
// turns within a band).
func (m *Model) candidates(queues []string) []*Job {
	var list []*Job
	pos := map[ID]int{}
	per := map[string]int{}
	for _, q := range queues {
		qs, ok := m.queues[q]
		if ok && qs.pausedUntil.After(m.now()) {
			continue
		}
		for _, j := range m.pendingOf(q) {
			if _, seen := pos[j.ID]; !seen {
				pos[j.ID] = per[q]
				per[q]++
				list = append(list, j)
			}
		}
	}
	slices.SortFunc(list, fairCmp)
	if m.variant {
		slices.SortStableFunc(list, func(a, b *Job) int {
			return cmp.Or(cmp.Compare(a.Band, b.Band), cmp.Compare(pos[a.ID], pos[b.ID]))
		})
	}
	return list
}

// pendingOf returns the pending jobs of queue q, best first.
func (m *Model) pendingOf(q string) []*Job {
	list := m.sorted(func(j *Job) bool { return j.Queue == q && j.State == queue.StatePending })
	slices.SortFunc(list, fairCmp)
	return list
}

// pick hands out up to req.Max candidates that their tenant and group let
// start now, moving the blocked ones to waiting.
func (m *Model) pick(req backend.LeaseRequest) []Leased {
	cands := m.candidates(req.Queues)
	queues := map[string]bool{}
	var out []Leased
	holds := 0
	for _, j := range cands {
		if len(out) == req.Max {
			break
		}
		queues[j.Queue] = true
		if !m.mayStart(j) {
			m.leave(j)
			m.hold(j)
			holds++
			continue
		}
		out = append(out, m.activate(j, req.LeaseFor))
	}
	if holds > MaxLeaseHolds {
		m.note("Lease", "%d pending jobs were found blocked, more than a backend looks at in one call", holds)
	}
	if len(queues) > 1 {
		m.note("Lease", "jobs of several queues competed: how a backend merges queues is open")
	}
	return out
}

// mayStart checks a pending job against its scopes at the moment of its
// lease: the tenant not paused and its active jobs below the limit; the
// group not paused or inside its crawl delay, and its active jobs below
// MaxConcurrency.
func (m *Model) mayStart(j *Job) bool {
	now := m.now()
	if j.Tenant != "" {
		ok, wake := TenantRoom(m.effective(j.Tenant).Limit, m.pausedUntil(j.Tenant), now,
			m.tenantCounts(j.Tenant)[queue.StateActive])
		if !wake.IsZero() {
			m.wakeTenant(j.Tenant, wake)
		}
		if !ok {
			return false
		}
	}
	g, ok := m.groups[j.Group]
	if j.Group == "" || !ok {
		return true
	}
	ok, wake := GroupMayStart(g.limits(), now, m.groupCounts(j.Group)[queue.StateActive])
	if !wake.IsZero() {
		m.wakeGroup(g, wake)
	}
	return ok
}

// activate leases a job: active, one more attempt, a new lease number and
// deadline; its queue's virtual time reaches its start tag, and a group
// with a crawl delay records the start.
func (m *Model) activate(j *Job, leaseFor time.Duration) Leased {
	now := m.now()
	m.leases++
	j.State, j.Attempt = queue.StateActive, j.Attempt+1
	j.Lease, j.LeaseUntil, j.WaitUntil = m.leases, now.Add(leaseFor), time.Time{}
	q := m.queue(j.Queue)
	q.vtime = max(q.vtime, j.Start)
	if g, ok := m.groups[j.Group]; ok && g.spec.MinInterval > 0 {
		g.lastStart, g.started = now, true
		m.wakeGroup(g, now.Add(g.spec.MinInterval))
	}
	return Leased{ID: j.ID, Lease: j.Lease}
}
