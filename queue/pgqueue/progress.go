package pgqueue

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
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

// SetProgress implements backend.ProgressBackend: one transaction that
// checks the lease under the job's row lock, records p and, with the
// event log on, logs it.
func (s *Store) SetProgress(ctx context.Context, id, token string, p queue.JobProgress) error {
	token = lookupToken(token)
	rid, err := parseID(id)
	if err != nil {
		return err
	}
	now := s.now()
	var pct *float64
	if p.Percent != nil {
		v := *p.Percent
		pct = &v
	}
	var data *string
	if len(p.Data) > 0 {
		d := string(p.Data)
		data = &d
	}
	return s.tx(ctx, "set progress", func(tx pgx.Tx) error {
		var st, tok string
		var e queue.Event
		err := tx.QueryRow(ctx, qualify(qHolderShare, s.schema), rid).Scan(&st, &tok, &e.Queue, &e.Kind, &e.Tenant, &e.Group, &e.Attempt)
		switch {
		case isNoRows(err):
			return queue.ErrNotFound
		case err != nil:
			return err
		case st != string(queue.StateActive) || tok != token:
			return queue.ErrLeaseLost
		}
		if _, err := tx.Exec(ctx, qualify(qPutProgress, s.schema), rid, pct, data, now); err != nil {
			return err
		}
		// The event carries the report as workers send it; its time is
		// the event's own.
		ev, err := json.Marshal(struct {
			Percent *float64        `json:"percent,omitempty"`
			Data    json.RawMessage `json:"data,omitempty"`
		}{p.Percent, p.Data})
		if err != nil {
			return err
		}
		e.Type, e.JobID, e.State, e.Data = queue.EventJobProgress, id, queue.StateActive, ev
		return s.logEvent(ctx, pgxDB{tx}, e, now)
	})
}

// getWithProgress reads job rid and its latest progress.
func (s *Store) getWithProgress(ctx context.Context, rid int64) (*queue.Job, error) {
	var (
		pct  sql.NullFloat64
		data sql.NullString
		at   sql.NullInt64
	)
	j, err := scanJob(s.pool.QueryRow(ctx, qualify(sprintf(qGetProgress, jobCols("j")), s.schema), rid), &pct, &data, &at)
	if err != nil {
		return nil, err
	}
	if at.Valid {
		j.Progress = &queue.JobProgress{UpdatedAt: fromNanos(at.Int64)}
		if pct.Valid {
			v := pct.Float64
			j.Progress.Percent = &v
		}
		if data.Valid {
			j.Progress.Data = json.RawMessage(data.String)
		}
	}
	return j, nil
}
