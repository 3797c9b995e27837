package backend

import (
	"context"

	"github.com/sluicehq/sluice/queue/queuetype"
)

// ProgressBackend is served (Features.Progress) by backends that record a
// running job's progress.
type ProgressBackend interface {
	// SetProgress records p as the progress of job id (UpdatedAt = now)
	// and appends a progress event to the event log when the backend
	// keeps one. Fenced like Complete: ErrLeaseLost when token does not
	// hold the active job, ErrNotFound when there is no such job. p has
	// been validated.
	SetProgress(ctx context.Context, id, token string, p queuetype.JobProgress) error
}
