// Package memqueue is a job store kept in memory, written outside the
// Sluice module the way any third-party backend.Backend would be: it uses only
// Sluice's public packages (queue, queue/backend, clock) and passes the
// conformance suite, queue/queuetest, with the few capabilities it declares.
//
// It loses every job when the process ends, so it is a model to copy, not
// a store to run. It declares delayed jobs on its own clock, cancelling jobs
// that have not started and atomic batches; it has no unique keys, no
// priorities, no listing, no tenants, no groups, no retries by hand, no
// outbox and no notifications. The Client refuses what it lacks with a
// *queue.UnsupportedError naming "memqueue", and the suite skips the tests
// that need it.
package memqueue

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// name is the backend's name in errors.
const name = "memqueue"

// Options configure a Backend.
type Options struct {
	// Clock is the time source; nil means the system clock.
	Clock clock.Clock
}

// Backend is a backend.Backend in memory. It is safe for concurrent use: one
// mutex makes each method one atomic step.
type Backend struct {
	clk clock.Clock

	mu     sync.Mutex
	seq    int64
	jobs   map[string]*entry
	ready  map[string]*byOrder // pending jobs per queue, by sequence
	due    byOrder             // scheduled and retrying jobs, by RunAt
	active map[string]*entry
	counts map[string]map[queue.State]int64
}

var _ backend.Backend = (*Backend)(nil)

// entry is a stored job and what only the store knows of it.
type entry struct {
	job   queue.Job
	seq   int64
	token string
}

// New returns an empty Backend.
func New(opts Options) *Backend {
	return &Backend{
		clk:    clock.Or(opts.Clock),
		jobs:   map[string]*entry{},
		ready:  map[string]*byOrder{},
		active: map[string]*entry{},
		counts: map[string]map[queue.State]int64{},
	}
}

// Features implements backend.Backend: the one place the backend says what it
// has. Leaving Tenants, Groups, Retry, TenantList, Outbox and Notify nil is
// how it says it lacks them.
func (b *Backend) Features() backend.Features {
	return backend.Features{
		Name: name,
		Capabilities: queue.NewCapabilities(queue.CapDelay, queue.CapClockDelays,
			queue.CapCancelPending, queue.CapAtomicBatch),
	}
}

// Enqueue implements backend.Backend. The Client has validated the specs and
// refused those that ask for what Features lacks; the check is repeated
// here for callers that skip the Client.
func (b *Backend) Enqueue(_ context.Context, specs []queue.JobSpec) ([]queue.Enqueued, error) {
	if err := b.Features().CheckSpecs(specs); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clk.Now()
	out := make([]queue.Enqueued, len(specs))
	for i, s := range specs {
		b.seq++
		e := &entry{seq: b.seq, job: queue.Job{JobSpec: s, ID: strconv.FormatInt(b.seq, 10), CreatedAt: now, UpdatedAt: now}}
		e.job.Payload = slices.Clone(s.Payload)
		b.jobs[e.job.ID] = e
		if s.RunAt.After(now) {
			b.schedule(e, queue.StateScheduled, s.RunAt)
		} else {
			b.makePending(e)
		}
		out[i] = queue.Enqueued{Job: e.copy()}
	}
	return out, nil
}

// Get implements backend.Backend.
func (b *Backend) Get(_ context.Context, id string) (*queue.Job, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.jobs[id]
	if !ok {
		return nil, queue.ErrNotFound
	}
	return e.copy(), nil
}

// List is not supported: Features does not declare queue.CapList.
func (b *Backend) List(context.Context, queue.ListFilter) (*queue.Page, error) {
	return nil, backend.Unsupported(name, queue.CapList)
}

// Stats implements backend.Backend from counts kept by every transition.
func (b *Backend) Stats(context.Context) ([]queue.QueueStats, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []queue.QueueStats
	for q, byState := range b.counts {
		st := queue.QueueStats{Queue: q, Counts: map[queue.State]int64{}}
		for s, n := range byState {
			if n > 0 {
				st.Counts[s] = n
			}
		}
		if len(st.Counts) > 0 {
			out = append(out, st)
		}
	}
	slices.SortFunc(out, func(a, c queue.QueueStats) int { return cmp.Compare(a.Queue, c.Queue) })
	return out, nil
}

// Cancel implements backend.Backend.
func (b *Backend) Cancel(_ context.Context, id string) (*queue.Job, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.jobs[id]
	if !ok {
		return nil, queue.ErrNotFound
	}
	switch e.job.State {
	case queue.StateCompleted, queue.StateFailed:
		return e.copy(), queue.ErrJobFinished
	case queue.StateCancelled:
	case queue.StateActive:
		e.job.CancelRequested = true
		e.job.UpdatedAt = b.clk.Now()
	default:
		b.finish(e, queue.StateCancelled, b.clk.Now())
	}
	return e.copy(), nil
}

// Lease implements backend.Backend: due jobs become pending first, then the
// oldest pending jobs of the asked queues become active.
func (b *Backend) Lease(_ context.Context, req backend.LeaseRequest) ([]queue.Lease, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clk.Now()
	b.promoteDue(now)
	var out []queue.Lease
	for len(out) < req.Max {
		e := b.nextReady(req.Queues)
		if e == nil {
			break
		}
		e.token = newToken()
		j := &e.job
		j.Attempt++
		j.WorkerID, j.StartedAt, j.LeaseUntil, j.UpdatedAt = req.WorkerID, now, later(now, req.LeaseFor), now
		b.setState(e, queue.StateActive)
		b.active[j.ID] = e
		out = append(out, queue.Lease{Job: e.copy(), Token: e.token})
	}
	return out, nil
}

// Extend implements backend.Backend.
func (b *Backend) Extend(_ context.Context, id, token string, leaseFor time.Duration) (backend.LeaseStatus, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, err := b.held(id, token)
	if err != nil {
		return backend.LeaseStatus{}, err
	}
	now := b.clk.Now()
	e.job.LeaseUntil, e.job.UpdatedAt = later(now, leaseFor), now
	return backend.LeaseStatus{Until: e.job.LeaseUntil, CancelRequested: e.job.CancelRequested}, nil
}

// Complete implements backend.Backend.
func (b *Backend) Complete(_ context.Context, id, token string, result []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, err := b.held(id, token)
	if err != nil {
		return err
	}
	e.job.Result = slices.Clone(result)
	b.finish(e, queue.StateCompleted, b.clk.Now())
	return nil
}

// Fail implements backend.Backend.
func (b *Backend) Fail(_ context.Context, id, token string, f backend.Failure) (queue.State, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, err := b.held(id, token)
	if err != nil {
		return "", err
	}
	now := b.clk.Now()
	e.record(queue.StorableError(f.Error), now) // the text every store keeps (Backend.Fail)
	switch {
	case e.job.CancelRequested:
		b.finish(e, queue.StateCancelled, now)
	case f.Permanent || e.job.Attempt >= e.job.MaxAttempts:
		b.finish(e, queue.StateFailed, now)
	default:
		b.release(e, now)
		b.schedule(e, queue.StateRetrying, later(now, f.RetryIn))
	}
	return e.job.State, nil
}

// Snooze implements backend.Backend.
func (b *Backend) Snooze(_ context.Context, id, token string, d time.Duration) (queue.State, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, err := b.held(id, token)
	if err != nil {
		return "", err
	}
	now := b.clk.Now()
	e.job.Attempt--
	switch {
	case e.job.CancelRequested:
		b.finish(e, queue.StateCancelled, now)
	case d <= 0:
		b.release(e, now)
		b.makePending(e)
	default:
		b.release(e, now)
		b.schedule(e, queue.StateScheduled, later(now, d))
	}
	return e.job.State, nil
}

// Requeue implements backend.Backend.
func (b *Backend) Requeue(ctx context.Context, id, token string) (queue.State, error) {
	return b.Snooze(ctx, id, token, 0)
}

// RescueExpired implements backend.Backend.
func (b *Backend) RescueExpired(_ context.Context, req backend.RescueRequest) (backend.RescueResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clk.Now()
	maxStalls := orDefault(req.MaxStalls, queue.DefaultMaxStalls)
	var expired []*entry
	for _, e := range b.active {
		if e.job.LeaseUntil.Before(now) && inQueues(e.job.Queue, req.Queues) {
			expired = append(expired, e)
		}
	}
	slices.SortFunc(expired, func(a, c *entry) int { return a.job.LeaseUntil.Compare(c.job.LeaseUntil) })
	var r backend.RescueResult
	for _, e := range expired[:min(len(expired), orDefault(req.Limit, backend.DefaultBatchLimit))] {
		e.job.Stalls++
		e.job.Attempt--
		switch {
		case e.job.CancelRequested:
			b.finish(e, queue.StateCancelled, now)
			r.Cancelled++
		case e.job.Stalls >= maxStalls:
			e.record(fmt.Sprintf("memqueue: stalled %d times (its lease expired before the worker finished)", e.job.Stalls), now)
			b.finish(e, queue.StateFailed, now)
			r.Failed++
		default:
			b.release(e, now)
			b.makePending(e)
			r.Requeued++
		}
	}
	return r, nil
}

// Cleanup implements backend.Backend.
func (b *Backend) Cleanup(_ context.Context, req backend.CleanupRequest) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clk.Now()
	var old []*entry
	for _, e := range b.jobs {
		keep, final := req.Retention.For(e.job.State)
		if final && keep >= 0 && !e.job.FinishedAt.After(now.Add(-keep)) && inQueues(e.job.Queue, req.Queues) {
			old = append(old, e)
		}
	}
	slices.SortFunc(old, func(a, c *entry) int { return a.job.FinishedAt.Compare(c.job.FinishedAt) })
	old = old[:min(len(old), orDefault(req.Limit, backend.DefaultBatchLimit))]
	for _, e := range old {
		b.counts[e.job.Queue][e.job.State]--
		delete(b.jobs, e.job.ID)
	}
	return len(old), nil
}
