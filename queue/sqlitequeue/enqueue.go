package sqlitequeue

import (
	"context"
	"database/sql"
	"errors"

	"github.com/sluicehq/sluice/queue"
)

const insertJob = `INSERT INTO jobs (queue, kind, payload, tenant, grp, priority, run_at,
	max_attempts, timeout, unique_key, unique_until, state, created_at, updated_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING ` + jobCols

// The key is held by a job whose window has not ended, or, without a
// window, by a job that has not finished.
const findUnique = `SELECT ` + jobCols + ` FROM jobs
	WHERE queue = ? AND unique_key = ?
	AND ((unique_until IS NULL AND state NOT IN ('completed', 'failed', 'cancelled')) OR unique_until > ?)
	ORDER BY id DESC LIMIT 1`

// Enqueue implements queue.Backend.
func (b *Backend) Enqueue(ctx context.Context, specs []queue.JobSpec) ([]queue.Enqueued, error) {
	out := make([]queue.Enqueued, len(specs))
	now := b.now()
	queues := map[string]bool{}
	err := b.write(ctx, "enqueue", func(tx *sql.Tx) error {
		for i, s := range specs {
			if s.UniqueKey != "" {
				j, err := scanJob(tx.QueryRowContext(ctx, findUnique, s.Queue, s.UniqueKey, now))
				if err == nil {
					out[i] = queue.Enqueued{Job: j, Duplicate: true}
					continue
				}
				if !errors.Is(err, sql.ErrNoRows) {
					return err
				}
			}
			j, err := scanJob(tx.QueryRowContext(ctx, insertJob, insertArgs(s, now)...))
			if err != nil {
				return err
			}
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

func insertArgs(s queue.JobSpec, now int64) []any {
	state := queue.StatePending
	runAt := toNanos(s.RunAt)
	if runAt > now {
		state = queue.StateScheduled
	} else {
		runAt = now
	}
	var uniqueUntil sql.NullInt64
	if s.UniqueKey != "" && s.UniqueFor > 0 {
		uniqueUntil = sql.NullInt64{Int64: now + int64(s.UniqueFor), Valid: true}
	}
	maxAttempts := s.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = queue.DefaultMaxAttempts
	}
	payload := s.Payload
	if payload == nil {
		payload = []byte{}
	}
	return []any{s.Queue, s.Kind, payload, s.Tenant, s.Group, s.Priority, runAt,
		maxAttempts, int64(s.Timeout), nullString(s.UniqueKey), uniqueUntil, string(state), now, now}
}
