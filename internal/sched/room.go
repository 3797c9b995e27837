package sched

import (
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// This file is the admission rule (backend.TenantBackend, "Limit and the
// waiting state"): where a job that becomes ready goes, and how waiting
// jobs are released when room appears.

func (m *Model) now() time.Time { return m.step.now }

// tenantPaused reports whether a pause of the tenant is in force.
func (m *Model) tenantPaused(name string) bool {
	t, ok := m.tenants[name]
	return ok && t.pausedUntil.After(m.now())
}

// wakeTenant and wakeGroup make a Lease at or after at fill the scope
// (an earlier wake already set is kept): a scope held back by a pause or
// crawl delay is looked at again when it ends. A wake is not taken back
// when the pause is: the scope is then filled at the old end too.
func (m *Model) wakeTenant(name string, at time.Time) {
	t := m.tenant(name)
	if t.wakeAt.IsZero() || at.Before(t.wakeAt) {
		t.wakeAt = at
	}
}

func (m *Model) wakeGroup(g *groupState, at time.Time) {
	if g.wakeAt.IsZero() || at.Before(g.wakeAt) {
		g.wakeAt = at
	}
}

// tenantRoom reports whether the tenant may admit one more pending job:
// not paused, and pending + active below its limit. A job being placed is
// in no state meanwhile, so it never counts itself.
func (m *Model) tenantRoom(name string) bool {
	if name == "" {
		return true
	}
	ok, wake := TenantRoom(m.effective(name).Limit, m.pausedUntil(name), m.now(), m.tenantCounts(name).admitted())
	if !wake.IsZero() {
		m.wakeTenant(name, wake)
	}
	return ok
}

// pausedUntil is the end of the tenant's pause (zero: never paused).
func (m *Model) pausedUntil(name string) time.Time {
	if t, ok := m.tenants[name]; ok {
		return t.pausedUntil
	}
	return time.Time{}
}

// limits is what the group's decisions read (see GroupLimits).
func (g *groupState) limits() GroupLimits {
	l := GroupLimits{MaxConcurrency: g.spec.MaxConcurrency, MinInterval: g.spec.MinInterval, PausedUntil: g.pausedUntil}
	if g.started {
		l.LastStart = g.lastStart
	}
	return l
}

// blockedUntil is when the group may start a job again (see
// GroupLimits.BlockedUntil).
func (g *groupState) blockedUntil() time.Time { return g.limits().BlockedUntil() }

// groupRoom reports whether the group may admit one more pending job: not
// paused or inside its crawl delay, with a crawl delay no other pending
// job (that one is the next start), and pending + active below its
// MaxConcurrency. A group that is gone has no limits.
func (m *Model) groupRoom(id string) bool {
	g, ok := m.groups[id]
	if id == "" || !ok {
		return true
	}
	c := m.groupCounts(id)
	ok, wake := GroupRoom(g.limits(), m.now(), c[queue.StatePending], c[queue.StateActive])
	if !wake.IsZero() {
		m.wakeGroup(g, wake)
	}
	return ok
}

// leave takes a job out of its state for a move: a job leaving pending or
// active frees room, so its tenant and group are filled when the step
// settles.
func (m *Model) leave(j *Job) {
	if j.State == queue.StatePending || j.State == queue.StateActive {
		m.step.fillT = addOnce(m.step.fillT, j.Tenant)
		m.step.fillG = addOnce(m.step.fillG, j.Group)
	}
	j.State = ""
	j.Lease, j.LeaseUntil, j.WaitUntil = 0, time.Time{}, time.Time{}
}

// place is the one decision for a job that becomes ready (enqueued without
// delay, due, requeued, rescued, snoozed for no time, retried, a
// completion job): it gets its fair place the first time, then goes
// pending when its tenant and its group both have room, and waits
// otherwise.
func (m *Model) place(j *Job) {
	m.leave(j)
	if !j.Tagged {
		m.tag(j)
	}
	if m.tenantRoom(j.Tenant) && m.groupRoom(j.Group) {
		j.State = queue.StatePending
		return
	}
	m.hold(j)
}

// hold makes a job wait, with its tenant's MaxWait deadline from now.
func (m *Model) hold(j *Job) {
	j.State = queue.StateWaiting
	j.WaitUntil = time.Time{}
	if j.Tenant != "" {
		j.WaitUntil = WaitDeadline(m.now(), m.effective(j.Tenant).MaxWait)
	}
}

// tag gives a job that becomes ready for the first time its start tag and
// sort key in its queue's fair order.
func (m *Model) tag(j *Job) {
	q := m.queue(j.Queue)
	w := m.effective(j.Tenant).Weight
	j.Start, q.finish[j.Tenant] = backend.FairTag(q.vtime, q.finish[j.Tenant], w)
	j.Band, j.Rank = backend.FairOrder(j.Start, j.Priority, q.aging)
	j.Tagged = true
}

// finish moves a job to a final state; a job of a group may complete it.
func (m *Model) finish(j *Job, st queue.State) {
	m.leave(j)
	j.State, j.FinishedAt = st, m.now()
	if j.Group != "" {
		m.step.done = addOnce(m.step.done, j.Group)
	}
}

// release moves a waiting job to pending.
func (m *Model) release(j *Job) {
	j.State, j.WaitUntil = queue.StatePending, time.Time{}
}

// fillTenant releases the tenant's best waiting jobs, as many as it has
// room for, skipping those whose group has none.
func (m *Model) fillTenant(name string) {
	list := m.waiting(func(j *Job) bool { return j.Tenant == name })
	if len(list) == 0 {
		return
	}
	if m.tenantPaused(name) {
		m.wakeTenant(name, m.tenants[name].pausedUntil)
		return
	}
	room := TenantFill(m.effective(name).Limit, int64(len(list)), m.tenantCounts(name).admitted())
	m.releaseBest(list, room, func(j *Job) bool { return m.groupRoom(j.Group) })
}

// fillGroup releases the group's best waiting jobs, as many as it has room
// for, skipping those whose tenant has none.
func (m *Model) fillGroup(id string) {
	g, ok := m.groups[id]
	list := m.waiting(func(j *Job) bool { return j.Group == id })
	if !ok || len(list) == 0 {
		return
	}
	if until := g.blockedUntil(); until.After(m.now()) {
		m.wakeGroup(g, until)
		return
	}
	c := m.groupCounts(id)
	room := GroupFill(g.limits(), int64(len(list)), c[queue.StatePending], c[queue.StateActive])
	m.releaseBest(list, room, func(j *Job) bool { return m.tenantRoom(j.Tenant) })
}

// releaseBest releases up to room jobs of list, in its order, for which
// other (the job's other scope has room) holds.
func (m *Model) releaseBest(list []*Job, room int64, other func(j *Job) bool) {
	for _, j := range list {
		if room <= 0 {
			return
		}
		if other(j) {
			m.release(j)
			room--
		}
	}
}
