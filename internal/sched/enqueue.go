package sched

import (
	"slices"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// Enqueued is the outcome of one spec of Enqueue: the new job, or the job
// holding the spec's unique key.
type Enqueued struct {
	ID        ID
	Duplicate bool
}

// Enqueue stores specs as new jobs in one atomic step (see
// backend.Backend.Enqueue): a spec due later is scheduled; one ready now is
// refused with a *queue.BacklogFullError when its tenant's pending and
// waiting jobs are at the tenant's Backlog, and otherwise gets its fair
// place and goes pending or waiting. A spec naming a group that is done or
// cancelled fails the whole batch with queue.ErrGroupClosed. On any error
// nothing changes.
func (m *Model) Enqueue(now time.Time, specs []queue.JobSpec) ([]Enqueued, error) {
	res, err := m.run("Enqueue", now, func(m *Model) (any, error) {
		saved := m.Clone()
		out := make([]Enqueued, len(specs))
		for i, s := range specs {
			j, dup, err := m.insert(s, true)
			if err != nil {
				m.restore(saved)
				return nil, err
			}
			out[i] = Enqueued{ID: j.ID, Duplicate: dup}
		}
		return out, nil
	})
	out, _ := res.([]Enqueued)
	return out, err
}

// restore puts back the state of saved, keeping the running operation.
func (m *Model) restore(saved *Model) {
	st, variant, choices := m.step, m.variant, m.choices
	*m = *saved
	m.step, m.variant, m.choices = st, variant, choices
}

// insert stores spec as a new job, or returns the job holding its unique
// key (dup). With checkBacklog, a ready job over its tenant's backlog is
// refused.
func (m *Model) insert(spec queue.JobSpec, checkBacklog bool) (*Job, bool, error) {
	now := m.now()
	if h := m.uniqueHolder(spec.Queue, spec.UniqueKey); h != nil {
		return h, true, nil
	}
	if spec.Group != "" {
		if err := m.join(spec.Group); err != nil {
			return nil, false, err
		}
	}
	if spec.MaxAttempts <= 0 {
		spec.MaxAttempts = queue.DefaultMaxAttempts
	}
	spec.Payload = slices.Clone(spec.Payload)
	m.seq++
	j := &Job{JobSpec: spec, ID: m.seq, CreatedAt: now, RunAt: now}
	if spec.RunAt.After(now) {
		j.State, j.RunAt = queue.StateScheduled, spec.RunAt
		m.jobs[j.ID] = j
		return j, false, nil
	}
	if checkBacklog && spec.Tenant != "" {
		if err := m.checkBacklog(spec.Tenant); err != nil {
			return nil, false, err
		}
	}
	m.jobs[j.ID] = j
	m.place(j)
	return j, false, nil
}

// checkBacklog refuses one more ready job of the tenant when its pending
// and waiting jobs are at its backlog cap.
func (m *Model) checkBacklog(tenant string) error {
	capacity := m.effective(tenant).Backlog
	c := m.tenantCounts(tenant)
	if BacklogFull(capacity, c[queue.StatePending], c[queue.StateWaiting]) {
		n := c[queue.StatePending] + c[queue.StateWaiting]
		return &queue.BacklogFullError{Tenant: tenant, Backlog: n, Cap: int64(capacity)}
	}
	return nil
}

// uniqueHolder returns the job holding key in q: one inside its UniqueFor
// window, or, without a window, one not finished. Deleted jobs hold
// nothing.
func (m *Model) uniqueHolder(q, key string) *Job {
	if key == "" {
		return nil
	}
	var holder *Job
	for _, j := range m.jobs {
		if j.Queue != q || j.UniqueKey != key {
			continue
		}
		held := !j.State.Final()
		if j.UniqueFor > 0 {
			held = j.CreatedAt.Add(j.UniqueFor).After(m.now())
		}
		if held && (holder == nil || j.ID > holder.ID) {
			holder = j
		}
	}
	return holder
}
