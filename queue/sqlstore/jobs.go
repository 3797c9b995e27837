package sqlstore

import (
	"database/sql"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// NewJob is the job a spec becomes when stored at now (without its id):
// defaults filled, scheduled when it runs later, else pending.
func NewJob(sp queue.JobSpec, now int64) *queue.Job {
	j := &queue.Job{JobSpec: sp, State: queue.StatePending}
	if sp.MaxAttempts <= 0 {
		j.MaxAttempts = queue.DefaultMaxAttempts
	}
	if sp.UniqueKey == "" {
		j.UniqueFor = 0
	}
	if j.Payload == nil {
		j.Payload = []byte{}
	}
	j.CreatedAt = FromNanos(now)
	j.UpdatedAt = j.CreatedAt
	if ToNanos(sp.RunAt) > now {
		j.State = queue.StateScheduled
		j.RunAt = sp.RunAt.UTC()
	} else {
		j.RunAt = j.CreatedAt
	}
	return j
}

// InsertArgs are the arguments of a dialect's insert of one new job j, in
// this order: queue, kind, payload, tenant, grp, priority, run_at,
// max_attempts, timeout, state, webhook, trace, created_at (also its
// updated_at), unique_key (NULL without one) and unique_until (NULL
// without a window), then more, the arguments a dialect's statement takes
// after them (in the one slice, so that none is copied).
func InsertArgs(j *queue.Job, more ...any) []any {
	now := ToNanos(j.CreatedAt)
	var uniqueUntil sql.NullInt64
	if j.UniqueKey != "" && j.UniqueFor > 0 {
		uniqueUntil = sql.NullInt64{Int64: now + int64(j.UniqueFor), Valid: true}
	}
	args := make([]any, 0, 15+len(more))
	args = append(args, j.Queue, j.Kind, j.Payload, j.Tenant, j.Group, j.Priority, ToNanos(j.RunAt),
		j.MaxAttempts, int64(j.Timeout), string(j.State), backend.EncodeWebhook(j.Webhook), j.Trace, now,
		NullString(j.UniqueKey), uniqueUntil)
	return append(args, more...)
}
