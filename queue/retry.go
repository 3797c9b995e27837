package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetype"
)

// ErrNotRetryable is matched (errors.Is) by every *NotRetryableError.
var ErrNotRetryable = errors.New("queue: job cannot be retried")

// ErrParentNotCompleted is matched (errors.Is) by a *NotRetryableError
// that refused a flow's job for a parent that has not completed (its
// Parent is set).
var ErrParentNotCompleted = errors.New("queue: a parent of the job has not completed")

// NotRetryableError says why Retry refused a job. Nothing was changed.
type NotRetryableError struct {
	// ID is the job's id.
	ID string
	// State is the job's state when Retry looked at it.
	State State
	// Group is the job's group when the job was refused for belonging to
	// one; empty when its state was the reason.
	Group string
	// Parent is, when the job was refused for its flow, the parent that
	// holds it back, and ParentState that parent's state: failed or
	// cancelled (and the job does not run anyway, OnParentFailure is not
	// "run"), or not finished yet.
	Parent      string
	ParentState State
}

func (e *NotRetryableError) Error() string {
	if e.Parent != "" && e.ParentState.Final() {
		return fmt.Sprintf("queue: job %s cannot run: its parent job %s is %s; retry job %s instead, which puts this job back to wait for it", e.ID, e.Parent, e.ParentState, e.Parent)
	}
	if e.Parent != "" {
		return fmt.Sprintf("queue: job %s cannot be retried before its parent job %s has completed (it is %s)", e.ID, e.Parent, e.ParentState)
	}
	if e.Group != "" {
		return fmt.Sprintf("queue: job %s belongs to group %s, which already counted it as finished; enqueue a new job instead of retrying it", e.ID, e.Group)
	}
	return fmt.Sprintf("queue: job %s is %s; only failed or cancelled jobs can be retried", e.ID, e.State)
}

// Is makes errors.Is(err, ErrNotRetryable) true, and errors.Is(err,
// ErrParentNotCompleted) when a parent was the reason.
func (e *NotRetryableError) Is(target error) bool {
	return target == ErrNotRetryable || (target == ErrParentNotCompleted && e.Parent != "")
}

// DuplicateError says that a job cannot take its unique key back because
// another job holds it. It matches ErrDuplicate.
type DuplicateError struct {
	// ID is the job that wanted the key; Holder is the job holding it.
	ID, Holder string
	// Queue and Key are the key's queue and the key.
	Queue, Key string
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("queue: job %s cannot be retried: its unique key %q in queue %s is held by job %s", e.ID, e.Key, e.Queue, e.Holder)
}

// Is makes errors.Is(err, ErrDuplicate) true.
func (e *DuplicateError) Is(target error) bool { return target == ErrDuplicate }

// Retry makes a failed or cancelled job ready again with fresh attempts,
// keeping its id and error history (see Retrier for the exact rules). It
// returns an *UnsupportedError when the backend cannot retry jobs, an
// *InvalidArgumentError for a malformed id, ErrNotFound for an unknown
// one, and a *NotRetryableError for a job that is not failed or cancelled,
// that belongs to a group, or whose parent has not completed.
func (c *Client) Retry(ctx context.Context, id string) (*Job, error) {
	f := c.b.Features()
	r := f.Retry
	if r == nil {
		return nil, backend.Unsupported(f.Name, CapRetry)
	}
	if err := queuetype.ValidName(Field("", "id"), id, true); err != nil {
		return nil, err
	}
	return r.Retry(ctx, id)
}
