package sched

import (
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// This file is backend.GroupBackend: groups, their limits' bookkeeping, and
// completion exactly once.

// CreateGroup stores a new group (spec as queue.Client passes it: valid,
// with CompletionQueue set when CompletionKind is), or returns an error
// matching queue.ErrGroupExists.
func (m *Model) CreateGroup(now time.Time, spec queue.GroupSpec) error {
	_, err := m.run("CreateGroup", now, func(m *Model) (any, error) {
		if _, ok := m.groups[spec.ID]; ok {
			return nil, fmt.Errorf("sched: %w: group %s", queue.ErrGroupExists, spec.ID)
		}
		g := m.newGroup(spec)
		if spec.TTL > 0 {
			g.deadline = now.Add(spec.TTL)
		}
		return nil, nil
	})
	return err
}

func (m *Model) newGroup(spec queue.GroupSpec) *groupState {
	spec.CompletionPayload = slices.Clone(spec.CompletionPayload)
	g := &groupState{spec: spec, createdAt: m.now(), deleted: map[queue.State]int64{}}
	m.groups[spec.ID] = g
	return g
}

// join is called for a job enqueued into group id: a group never created
// is created with no limits, and a done or cancelled one refuses the job.
func (m *Model) join(id string) error {
	g, ok := m.groups[id]
	if !ok {
		m.newGroup(queue.GroupSpec{ID: id})
		return nil
	}
	if g.cancelRequested || g.done {
		return fmt.Errorf("sched: %w: group %s", queue.ErrGroupClosed, id)
	}
	return nil
}

// CancelGroup marks the group cancel-requested, cancels its jobs that have
// not started and flags its active ones, in one step; a cancelled or done
// group is left as it is. It returns an error matching
// queue.ErrGroupNotFound for an unknown group.
func (m *Model) CancelGroup(now time.Time, id string) error {
	_, err := m.run("CancelGroup", now, func(m *Model) (any, error) {
		if _, ok := m.groups[id]; !ok {
			return nil, fmt.Errorf("sched: %w: group %s", queue.ErrGroupNotFound, id)
		}
		m.cancelGroup(id)
		return nil, nil
	})
	return err
}

func (m *Model) cancelGroup(id string) {
	g := m.groups[id]
	if g.cancelRequested || g.done {
		return
	}
	g.cancelRequested, g.deadline, g.wakeAt = true, time.Time{}, time.Time{}
	for _, j := range m.sorted(func(j *Job) bool { return j.Group == id && !j.State.Final() }) {
		if j.State == queue.StateActive {
			j.CancelRequested = true
			continue
		}
		m.finish(j, queue.StateCancelled)
	}
	m.step.done = addOnce(m.step.done, id)
}

// progress is the group's progress as GroupBackend.Group reports it, with
// its completion job's id in the model.
func (m *Model) progress(id string) (queue.GroupProgress, ID) {
	g := m.groups[id]
	c := m.groupCounts(id)
	p := queue.GroupProgress{
		GroupSpec: g.spec,
		Scheduled: c[queue.StateScheduled], Pending: c[queue.StatePending], Waiting: c[queue.StateWaiting],
		Active: c[queue.StateActive], Retrying: c[queue.StateRetrying], Completed: c[queue.StateCompleted],
		Failed: c[queue.StateFailed], Cancelled: c[queue.StateCancelled],
		CancelRequested: g.cancelRequested, Done: g.done, CreatedAt: g.createdAt, FinishedAt: g.doneAt,
	}
	if g.pausedUntil.After(m.now()) {
		p.PausedUntil = g.pausedUntil
	}
	return p, g.completion
}

// Group returns the group's progress at now and its completion job (0 when
// none), or an error matching queue.ErrGroupNotFound.
func (m *Model) Group(now time.Time, id string) (queue.GroupProgress, ID, error) {
	if _, ok := m.groups[id]; !ok {
		return queue.GroupProgress{}, 0, fmt.Errorf("sched: %w: group %s", queue.ErrGroupNotFound, id)
	}
	m.step = &step{now: now}
	defer func() { m.step = nil }()
	p, c := m.progress(id)
	return p, c, nil
}

// completeGroup marks the group done when it has jobs and none unfinished,
// and enqueues its completion job. A done group stays done, so this
// happens once whatever moves its last jobs.
func (m *Model) completeGroup(id string) {
	g, ok := m.groups[id]
	if !ok || g.done {
		return
	}
	c := m.groupCounts(id)
	if !GroupComplete(c.unfinished(), c.total()) {
		return
	}
	g.done, g.doneAt, g.deadline, g.wakeAt = true, m.now(), time.Time{}, time.Time{}
	p, _ := m.progress(id)
	spec, ok := backend.CompletionJob(p)
	if !ok {
		return
	}
	if m.step.completions++; m.step.completions > 1 {
		m.note("completion", "several groups completed in one step: their completion jobs' order is open")
	}
	j, dup, _ := m.insert(spec, false)
	if !dup {
		j.Completes = id
	}
	g.completion = j.ID
}
