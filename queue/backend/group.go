package backend

import (
	"context"

	"github.com/sluicehq/sluice/queue/queuetype"
)

// GroupBackend is the part a Backend with CapGroups serves (Features.Groups).
//
// A job joins a group by JobSpec.Group. A group named by a job but never
// created is created with the zero GroupSpec (no limits, no completion
// job); a job naming a group that is done or cancel-requested fails the
// enqueue with ErrGroupClosed and nothing is stored.
//
// Limits: MaxConcurrency and MinInterval are admission rules like a
// tenant's limit (see TenantBackend): a ready job of the group is pending
// only while the group has room (active + pending < MaxConcurrency; with a
// MinInterval, no other pending job and at least MinInterval since the
// group's last start), otherwise it waits. Lease checks them again
// atomically and records the start time; a group paused by Pause starts
// nothing.
//
// Completion: in the same atomic step as the transition that leaves the
// group with jobs and none of them unfinished (complete, final fail,
// cancel, a rescue that fails or cancels, MaxWait expiry, CancelGroup),
// the group is marked done and, when it has a CompletionKind, the job
// CompletionJob(progress) is enqueued. The done mark is written only if it
// was not set, so concurrent last completions, retried transitions and
// rescues of crashed workers enqueue it exactly once.
type GroupBackend interface {
	// CreateGroup stores a new group, or returns ErrGroupExists.
	CreateGroup(ctx context.Context, spec queuetype.GroupSpec) (*queuetype.GroupProgress, error)
	// Group returns the group's progress, or ErrGroupNotFound.
	Group(ctx context.Context, id string) (*queuetype.GroupProgress, error)
	// CancelGroup, in one atomic step, marks the group cancel-requested,
	// cancels its scheduled, pending, waiting and retrying jobs, and sets
	// CancelRequested on its active ones (as Cancel does). Cancelling a
	// cancelled or done group changes nothing. It returns the progress
	// after the call, or ErrGroupNotFound.
	CancelGroup(ctx context.Context, id string) (*queuetype.GroupProgress, error)
}
