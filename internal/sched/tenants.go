package sched

import (
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// This file is backend.TenantBackend: settings, aging and pauses.

// SetTenant stores cfg as the tenant's own settings, or as the defaults
// when tenant is empty, and releases at once the waiting jobs the new
// settings make room for.
func (m *Model) SetTenant(now time.Time, tenant string, cfg queue.TenantConfig) {
	_, _ = m.run("SetTenant", now, func(m *Model) (any, error) {
		if tenant != "" {
			t := m.tenant(tenant)
			t.own, t.settings = cfg, true
			m.step.fillT = addOnce(m.step.fillT, tenant)
			return nil, nil
		}
		m.defaults = cfg
		for _, j := range m.sorted(func(j *Job) bool { return j.State == queue.StateWaiting }) {
			m.step.fillT = addOnce(m.step.fillT, j.Tenant)
		}
		slices.Sort(m.step.fillT)
		return nil, nil
	})
}

// SetAging sets the aging step of a queue; it applies to jobs that become
// ready afterwards.
func (m *Model) SetAging(q string, step int) { m.queue(q).aging = step }

// Pause stops scope starting jobs until now + d, keeping a later end in
// force, and returns the end (zero when none is in force); d <= 0 ends a
// pause at once. A paused tenant's or group's pending jobs move to
// waiting in the same step; a resumed one releases what it has room for.
// A paused queue keeps its jobs pending: Lease skips it. An unknown group
// gives an error matching queue.ErrGroupNotFound.
func (m *Model) Pause(now time.Time, scope queue.Scope, d time.Duration) (time.Time, error) {
	res, err := m.run("Pause", now, func(m *Model) (any, error) {
		end := time.Time{}
		if d > 0 {
			end = now.Add(d)
		}
		until, err := m.pause(scope, end)
		if err != nil || !until.After(now) {
			return time.Time{}, err
		}
		return until, nil
	})
	until, _ := res.(time.Time)
	return until, err
}

// later is the end of a pause set to end over one ending at cur: the
// later of the two, or none when end is zero (a resume).
func later(cur, end time.Time) time.Time {
	if end.IsZero() || !cur.After(end) {
		return end
	}
	return cur
}

func (m *Model) pause(scope queue.Scope, end time.Time) (time.Time, error) {
	switch scope.Kind {
	case queue.ScopeQueue:
		q := m.queue(scope.Name)
		q.pausedUntil = later(q.pausedUntil, end)
		return q.pausedUntil, nil
	case queue.ScopeTenant:
		t := m.tenant(scope.Name)
		t.pausedUntil, t.settings = later(t.pausedUntil, end), true
		if t.pausedUntil.After(m.now()) {
			m.wakeTenant(scope.Name, t.pausedUntil)
		}
		m.paused(t.pausedUntil, func(j *Job) bool { return j.Tenant == scope.Name }, &m.step.fillT, scope.Name)
		return t.pausedUntil, nil
	case queue.ScopeGroup:
		g, ok := m.groups[scope.Name]
		if !ok {
			return time.Time{}, fmt.Errorf("sched: %w: group %s", queue.ErrGroupNotFound, scope.Name)
		}
		g.pausedUntil = later(g.pausedUntil, end)
		if g.pausedUntil.After(m.now()) {
			m.wakeGroup(g, g.pausedUntil)
		}
		m.paused(g.pausedUntil, func(j *Job) bool { return j.Group == scope.Name }, &m.step.fillG, scope.Name)
		return g.pausedUntil, nil
	}
	return time.Time{}, backend.InvalidArgument(queue.Field("Scope", "Kind"), "must be tenant, group or queue, got %q", scope.Kind)
}

// paused applies a tenant's or group's new pause end to its jobs (in):
// in force, its pending jobs wait; over, the scope (name, in the step's
// fills) releases what it has room for.
func (m *Model) paused(until time.Time, in func(j *Job) bool, fills *[]string, name string) {
	if !until.After(m.now()) {
		*fills = addOnce(*fills, name)
		return
	}
	list := m.sorted(func(j *Job) bool { return j.State == queue.StatePending && in(j) })
	slices.SortFunc(list, fairCmp)
	for _, j := range list {
		m.leave(j)
		m.hold(j)
	}
}

// Tenant returns the tenant's settings and job counts at now, as
// TenantBackend.Tenant reports them.
func (m *Model) Tenant(now time.Time, name string) queue.TenantInfo {
	info := queue.TenantInfo{Tenant: name, Effective: m.effective(name)}
	if t, ok := m.tenants[name]; ok {
		info.Own = t.own
		if t.pausedUntil.After(now) {
			info.PausedUntil = t.pausedUntil
		}
	}
	c := m.tenantCounts(name)
	info.Scheduled, info.Pending, info.Waiting = c[queue.StateScheduled], c[queue.StatePending], c[queue.StateWaiting]
	info.Active, info.Retrying = c[queue.StateActive], c[queue.StateRetrying]
	return info
}

// Listed returns, by name, the tenants a TenantLister lists: those with
// unfinished jobs or settings (or a pause) of their own.
func (m *Model) Listed() []string {
	var out []string
	for n, t := range m.tenants {
		if n != "" && t.settings {
			out = addOnce(out, n)
		}
	}
	for _, j := range m.jobs {
		if j.Tenant != "" && !j.State.Final() {
			out = addOnce(out, j.Tenant)
		}
	}
	slices.Sort(out)
	return out
}
