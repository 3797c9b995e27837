package sqlitequeue

import (
	"context"
	"database/sql"
	"errors"
	"strconv"

	"github.com/sluicehq/sluice/queue"
)

var insertJob = hot(`INSERT INTO jobs (queue, kind, payload, tenant, grp, priority, run_at,
	max_attempts, timeout, unique_key, unique_until, state, created_at, updated_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)

// The key is held by a job whose window has not ended, or, without a
// window, by a job that has not finished.
var findUnique = hot(`SELECT ` + jobCols + ` FROM jobs
	WHERE queue = ? AND unique_key = ?
	AND ((unique_until IS NULL AND state NOT IN ('completed', 'failed', 'cancelled')) OR unique_until > ?)
	ORDER BY id DESC LIMIT 1`)

// Enqueue implements queue.Backend.
func (b *Backend) Enqueue(ctx context.Context, specs []queue.JobSpec) ([]queue.Enqueued, error) {
	out := make([]queue.Enqueued, len(specs))
	now := b.now()
	queues := map[string]bool{}
	err := b.write(ctx, "enqueue", func(tx *wtx) error {
		for i, s := range specs {
			if s.UniqueKey != "" {
				j, err := scanJob(tx.queryRow(findUnique, s.Queue, s.UniqueKey, now))
				if err == nil {
					out[i] = queue.Enqueued{Job: j, Duplicate: true}
					continue
				}
				if !errors.Is(err, sql.ErrNoRows) {
					return err
				}
			}
			j := newJob(s, now)
			res, err := tx.exec(insertJob, insertArgs(j)...)
			if err != nil {
				return err
			}
			id, err := res.LastInsertId()
			if err != nil {
				return err
			}
			j.ID = strconv.FormatInt(id, 10)
			out[i] = queue.Enqueued{Job: j}
			queues[s.Queue] = j.State == queue.StatePending || queues[s.Queue]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for q, ready := range queues {
		if ready {
			b.notify(q)
		}
	}
	return out, nil
}

// newJob is the job a spec becomes when stored at now (without its id).
func newJob(s queue.JobSpec, now int64) *queue.Job {
	j := &queue.Job{JobSpec: s, State: queue.StatePending}
	if s.MaxAttempts <= 0 {
		j.MaxAttempts = queue.DefaultMaxAttempts
	}
	if s.UniqueKey == "" {
		j.UniqueFor = 0
	}
	if j.Payload == nil {
		j.Payload = []byte{}
	}
	j.CreatedAt = fromNanos(now)
	j.UpdatedAt = j.CreatedAt
	if toNanos(s.RunAt) > now {
		j.State = queue.StateScheduled
		j.RunAt = s.RunAt.UTC()
	} else {
		j.RunAt = j.CreatedAt
	}
	return j
}

func insertArgs(j *queue.Job) []any {
	now := toNanos(j.CreatedAt)
	var uniqueUntil sql.NullInt64
	if j.UniqueKey != "" && j.UniqueFor > 0 {
		uniqueUntil = sql.NullInt64{Int64: now + int64(j.UniqueFor), Valid: true}
	}
	return []any{j.Queue, j.Kind, j.Payload, j.Tenant, j.Group, j.Priority, toNanos(j.RunAt),
		j.MaxAttempts, int64(j.Timeout), nullString(j.UniqueKey), uniqueUntil, string(j.State), now, now}
}
