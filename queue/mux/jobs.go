package mux

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// Get returns the job from the backend its id names.
func (m *Backend) Get(ctx context.Context, id string) (*queue.Job, error) {
	r, inner := m.locate(id)
	j, err := r.b.Get(ctx, inner)
	return r.outer(j), r.wrap(err)
}

// Cancel cancels the job on the backend its id names, as that backend
// cancels (the lane reaches only jobs it runs in this process).
func (m *Backend) Cancel(ctx context.Context, id string) (*queue.Job, error) {
	r, inner := m.locate(id)
	j, err := r.b.Cancel(ctx, inner)
	return r.outer(j), r.wrap(err)
}

// Extend renews a lease on the job's backend.
func (m *Backend) Extend(ctx context.Context, id, token string, leaseFor time.Duration) (backend.LeaseStatus, error) {
	r, inner := m.locate(id)
	st, err := r.b.Extend(ctx, inner, token, leaseFor)
	return st, r.wrap(err)
}

// Complete completes the job on its backend.
func (m *Backend) Complete(ctx context.Context, id, token string, result []byte) error {
	r, inner := m.locate(id)
	return r.wrap(r.b.Complete(ctx, inner, token, result))
}

// Fail fails the attempt on the job's backend.
func (m *Backend) Fail(ctx context.Context, id, token string, f backend.Failure) (queue.State, error) {
	r, inner := m.locate(id)
	st, err := r.b.Fail(ctx, inner, token, f)
	return st, r.wrap(err)
}

// Snooze snoozes the job on its backend.
func (m *Backend) Snooze(ctx context.Context, id, token string, d time.Duration) (queue.State, error) {
	r, inner := m.locate(id)
	st, err := r.b.Snooze(ctx, inner, token, d)
	return st, r.wrap(err)
}

// Requeue gives the job back to its backend.
func (m *Backend) Requeue(ctx context.Context, id, token string) (queue.State, error) {
	r, inner := m.locate(id)
	st, err := r.b.Requeue(ctx, inner, token)
	return st, r.wrap(err)
}

func errResults(got, want int) error {
	return fmt.Errorf("mux: backend returned %d results for %d specs", got, want)
}

// Retry brings a failed or cancelled job back on the backend its id names
// (its Features' Retry part); a backend that cannot retry answers as Client.Retry
// does for it, with an *UnsupportedError.
func (m *Backend) Retry(ctx context.Context, id string) (*queue.Job, error) {
	r, inner := m.locate(id)
	f := r.b.Features()
	if f.Retry == nil {
		return nil, backend.Unsupported(f.Name, queue.CapRetry)
	}
	j, err := f.Retry.Retry(ctx, inner)
	return r.outer(j), r.wrap(r.outerErr(err))
}

// outerErr rewrites the job ids a retry error names to the ids the router
// shows, so the error names the job as the caller knows it.
func (r route) outerErr(err error) error {
	if r.prefix == "" {
		return err
	}
	var nr *queue.NotRetryableError
	if errors.As(err, &nr) {
		cp := *nr
		cp.ID = r.prefix + cp.ID
		if cp.Parent != "" { // a flow is on one backend
			cp.Parent = r.prefix + cp.Parent
		}
		return &cp
	}
	var de *queue.DuplicateError
	if errors.As(err, &de) {
		cp := *de
		cp.ID, cp.Holder = r.prefix+cp.ID, r.prefix+cp.Holder
		return &cp
	}
	return err
}
