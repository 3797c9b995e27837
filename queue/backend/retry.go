package backend

import (
	"context"

	"github.com/sluicehq/sluice/queue/queuetype"
)

// Retrier is served (Features.Retry) by backends with CapRetry: they can
// bring a job that ended failed or cancelled back to life.
//
// Retry, in one atomic step, makes a failed or cancelled job ready again:
//
//   - it keeps its id, spec, sequence and fair place (a job that was
//     never ready gets its place as any newly ready job does);
//   - Attempt and Stalls go back to 0, so it has MaxAttempts attempts
//     again; Errors and LastError are kept, so the history of the earlier
//     attempts stays visible;
//   - Result, FinishedAt, CancelRequested and the lease fields are
//     cleared; RunAt and UpdatedAt become now;
//   - it becomes pending through the same admission as a newly enqueued
//     job, so it waits (StateWaiting) when its tenant has no room or is
//     paused. A tenant's backlog cap is not checked: the job was counted
//     once already, and an operator's retry must not fail for load.
//
// It refuses, changing nothing:
//
//   - an unknown id: ErrNotFound;
//   - a job in any other state: a *NotRetryableError naming the state;
//   - a job of a group: a *NotRetryableError naming the group. Its group
//     counted the job final when it ended and may be done already, its
//     completion job enqueued with the job among the failed; running the
//     job again would contradict a completion that was reported once;
//   - a job of a flow with a parent that has not completed: a
//     *NotRetryableError naming the parent and its state. A failed or
//     cancelled parent cancelled the job, and the way to run it again is
//     to retry that parent, which puts it back to wait (unless the job's
//     OnParentFailure is "run": an ended parent does not hold it back).
//     An unfinished parent would see its child run before it;
//   - a job with a unique key that another job holds now (one enqueued
//     with the same key after this one ended): an error matching
//     ErrDuplicate that names the holder, since two jobs never hold one
//     key. A key whose UniqueFor window has passed is not held again.
//
// It returns the job as it is after the call.
type Retrier interface {
	Retry(ctx context.Context, id string) (*queuetype.Job, error)
}
