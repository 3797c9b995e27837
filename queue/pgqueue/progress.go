package pgqueue

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

var _ backend.ProgressBackend = (*Store)(nil)

const (
	// qHolderShare reads a job's fence under a share lock, so the job
	// cannot change state before the report commits.
	qHolderShare = `SELECT state, coalesce(lease_token, ''), queue, kind, tenant, grp, attempt
		FROM __schema__.jobs WHERE id = $1 FOR SHARE`
	qPutProgress = `INSERT INTO __schema__.job_progress (job_id, percent, data, reported_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (job_id) DO UPDATE SET percent = $2, data = $3, reported_at = $4`
	// qGetProgress is the store's get with the job's progress after its
	// columns.
	qGetProgress = `SELECT %s, p.percent, p.data, p.reported_at FROM __schema__.jobs j
		LEFT JOIN __schema__.job_progress p ON p.job_id = j.id WHERE j.id = $1`
)

// progressStatements are the statements of job progress on schema.
func progressStatements(schema string) *sqlstore.ProgressStatements {
	return &sqlstore.ProgressStatements{Fence: qualify(qHolderShare, schema), Put: qualify(qPutProgress, schema),
		Get: qualify(sprintf(qGetProgress, sqlstore.JobCols("j")), schema)}
}

// SetProgress implements backend.ProgressBackend: one transaction that
// checks the lease under the job's row lock, records p and, with the
// event log on, logs it.
func (s *Store) SetProgress(ctx context.Context, id, token string, p queue.JobProgress) error {
	token = lookupToken(token)
	rid, err := sqlstore.ParseID(id)
	if err != nil {
		return err
	}
	now := s.now()
	return s.tx(ctx, "set progress", func(tx pgx.Tx) error {
		return sqlstore.SetProgress(onPgx{ctx, tx}, s.pq, rid, id, token, p, now, func(e queue.Event) error {
			return s.logEvent(ctx, pgxDB{tx}, e, now)
		})
	})
}

// getWithProgress reads job rid and its latest progress.
func (s *Store) getWithProgress(ctx context.Context, rid int64) (*queue.Job, error) {
	return sqlstore.ReadJob(onPgx{ctx, s.pool}, s.pq, rid)
}
