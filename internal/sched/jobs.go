package sched

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// This file is backend.Backend's transitions of a job. The ones that take a
// lease are fenced: they succeed only while the job is active under that
// lease number, and otherwise return queue.ErrLeaseLost (queue.ErrNotFound
// for a job that does not exist).

// holder returns the job held by lease, or the fencing error.
func (m *Model) holder(id ID, lease int64) (*Job, error) {
	j, ok := m.jobs[id]
	if !ok {
		return nil, queue.ErrNotFound
	}
	if j.State != queue.StateActive || j.Lease != lease {
		return nil, queue.ErrLeaseLost
	}
	return j, nil
}

// Complete ends an attempt in success.
func (m *Model) Complete(now time.Time, id ID, lease int64) error {
	_, err := m.run("Complete", now, func(m *Model) (any, error) {
		j, err := m.holder(id, lease)
		if err == nil {
			m.finish(j, queue.StateCompleted)
		}
		return nil, err
	})
	return err
}

// Fail ends an attempt in failure and returns the job's new state:
// cancelled when a cancel was requested, failed when f is permanent or no
// attempt is left, retrying at now + f.RetryIn otherwise.
func (m *Model) Fail(now time.Time, id ID, lease int64, f backend.Failure) (queue.State, error) {
	res, err := m.run("Fail", now, func(m *Model) (any, error) {
		j, err := m.holder(id, lease)
		if err != nil {
			return queue.State(""), err
		}
		switch {
		case j.CancelRequested:
			m.finish(j, queue.StateCancelled)
		case f.Permanent || j.Attempt >= j.MaxAttempts:
			m.finish(j, queue.StateFailed)
		default:
			m.leave(j)
			j.State, j.RunAt = queue.StateRetrying, now.Add(max(f.RetryIn, 0))
		}
		return j.State, nil
	})
	st, _ := res.(queue.State)
	return st, err
}

// Snooze gives an attempt back (Attempt-1) and runs the job again after d:
// scheduled at now + d, or ready at once when d <= 0; cancelled when a
// cancel was requested.
func (m *Model) Snooze(now time.Time, id ID, lease int64, d time.Duration) (queue.State, error) {
	res, err := m.run("Snooze", now, func(m *Model) (any, error) {
		j, err := m.holder(id, lease)
		if err != nil {
			return queue.State(""), err
		}
		j.Attempt--
		switch {
		case j.CancelRequested:
			m.finish(j, queue.StateCancelled)
		case d > 0:
			m.leave(j)
			j.State, j.RunAt = queue.StateScheduled, now.Add(d)
		default:
			m.place(j)
		}
		return j.State, nil
	})
	st, _ := res.(queue.State)
	return st, err
}

// Requeue gives a leased job back at once: Snooze with no delay.
func (m *Model) Requeue(now time.Time, id ID, lease int64) (queue.State, error) {
	return m.Snooze(now, id, lease, 0)
}

// Cancel cancels a job that has not started (and flags an active one) and
// returns its state after the call; a completed or failed job gives
// queue.ErrJobFinished.
func (m *Model) Cancel(now time.Time, id ID) (queue.State, error) {
	res, err := m.run("Cancel", now, func(m *Model) (any, error) {
		j, ok := m.jobs[id]
		if !ok {
			return queue.State(""), queue.ErrNotFound
		}
		switch j.State {
		case queue.StateActive:
			j.CancelRequested = true
		case queue.StateCompleted, queue.StateFailed:
			return j.State, queue.ErrJobFinished
		case queue.StateCancelled:
		default:
			m.finish(j, queue.StateCancelled)
		}
		return j.State, nil
	})
	st, _ := res.(queue.State)
	return st, err
}

// RescueExpired recovers the active jobs whose lease ended before now
// (backend.Backend.RescueExpired): queue by queue in name order (all queues
// when req.Queues is empty), each by deadline then sequence, at most
// req.Limit. The variant takes them by deadline across queues. Every
// backend settles once at the end.
func (m *Model) RescueExpired(now time.Time, req backend.RescueRequest) backend.RescueResult {
	res, _ := m.run("RescueExpired", now, func(m *Model) (any, error) {
		return m.rescue(req), nil
	})
	out, _ := res.(backend.RescueResult)
	return out
}

func (m *Model) rescue(req backend.RescueRequest) backend.RescueResult {
	maxStalls := cmp.Or(max(req.MaxStalls, 0), queue.DefaultMaxStalls)
	limit := cmp.Or(max(req.Limit, 0), backend.DefaultBatchLimit)
	list := m.sorted(func(j *Job) bool {
		return j.State == queue.StateActive && j.LeaseUntil.Before(m.now()) &&
			(len(req.Queues) == 0 || slices.Contains(req.Queues, j.Queue))
	})
	slices.SortStableFunc(list, func(a, b *Job) int {
		if m.variant {
			return a.LeaseUntil.Compare(b.LeaseUntil)
		}
		return cmp.Or(cmp.Compare(a.Queue, b.Queue), a.LeaseUntil.Compare(b.LeaseUntil))
	})
	var r backend.RescueResult
	for _, j := range list[:min(len(list), limit)] {
		j.Stalls++
		j.Attempt--
		switch {
		case j.CancelRequested:
			m.finish(j, queue.StateCancelled)
			r.Cancelled++
		case j.Stalls >= maxStalls:
			m.finish(j, queue.StateFailed)
			r.Failed++
		default:
			m.place(j)
			r.Requeued++
		}
	}
	return r
}

// Retry makes a failed or cancelled job that belongs to no group ready
// again (backend.Retrier) with fresh attempts, through the same admission
// as a new job but without the backlog check.
func (m *Model) Retry(now time.Time, id ID) error {
	_, err := m.run("Retry", now, func(m *Model) (any, error) {
		j, ok := m.jobs[id]
		switch {
		case !ok:
			return nil, queue.ErrNotFound
		case j.State != queue.StateFailed && j.State != queue.StateCancelled:
			return nil, &queue.NotRetryableError{ID: fmt.Sprint(id), State: j.State}
		case j.Group != "":
			return nil, &queue.NotRetryableError{ID: fmt.Sprint(id), State: j.State, Group: j.Group}
		}
		if h := m.uniqueHolder(j.Queue, j.UniqueKey); h != nil && h != j {
			return nil, &queue.DuplicateError{ID: fmt.Sprint(id), Holder: fmt.Sprint(h.ID), Queue: j.Queue, Key: j.UniqueKey}
		}
		j.Attempt, j.Stalls, j.CancelRequested = 0, 0, false
		j.RunAt, j.FinishedAt = now, time.Time{}
		m.place(j)
		return nil, nil
	})
	return err
}
