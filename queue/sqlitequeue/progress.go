package sqlitequeue

import (
	"context"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

var _ backend.ProgressBackend = (*Backend)(nil)

var (
	qFence       = hot(`SELECT state, coalesce(lease_token, ''), queue, kind, tenant, grp, attempt FROM jobs WHERE id = ?`)
	qPutProgress = hot(`INSERT INTO job_progress (job_id, percent, data, reported_at) VALUES (?1, ?2, ?3, ?4)
		ON CONFLICT (job_id) DO UPDATE SET percent = ?2, data = ?3, reported_at = ?4`)
	qLogProgress = hot(`INSERT INTO event_log (type, job_id, queue, kind, tenant, grp, state, attempt, data, created_at)
		SELECT 'job.progress', CAST(id AS TEXT), queue, kind, tenant, grp, state, attempt, ?2, ?3 FROM jobs WHERE id = ?1`)
)

// progressQ are the statements of job progress; Get joins a job with its
// progress.
var progressQ = &sqlstore.ProgressStatements{Fence: qFence, Put: qPutProgress,
	Get: `SELECT ` + jobCols + `, job_progress.percent, job_progress.data, job_progress.reported_at
		FROM jobs LEFT JOIN job_progress ON job_progress.job_id = jobs.id WHERE id = ?`}

// SetProgress implements backend.ProgressBackend: one write that checks the
// lease, records p and, with the event log on, logs it.
func (b *Backend) SetProgress(ctx context.Context, id, token string, p queue.JobProgress) error {
	rid, err := sqlstore.ParseID(id)
	if err != nil {
		return err
	}
	now := b.now()
	return b.write(ctx, "set progress", func(tx *wtx) error {
		var log func(queue.Event) error
		if b.events {
			log = func(e queue.Event) error {
				_, err := tx.exec(qLogProgress, rid, string(e.Data), now)
				return err
			}
		}
		return sqlstore.SetProgress(tx, progressQ, rid, id, token, p, now, log)
	})
}
