package sqlitequeue

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

var _ backend.ProgressBackend = (*Backend)(nil)

var (
	qFence       = hot(`SELECT state, coalesce(lease_token, '') FROM jobs WHERE id = ?`)
	qPutProgress = hot(`INSERT INTO job_progress (job_id, percent, data, reported_at) VALUES (?1, ?2, ?3, ?4)
		ON CONFLICT (job_id) DO UPDATE SET percent = ?2, data = ?3, reported_at = ?4`)
	qLogProgress = hot(`INSERT INTO event_log (type, job_id, queue, kind, tenant, grp, state, attempt, data, created_at)
		SELECT 'job.progress', CAST(id AS TEXT), queue, kind, tenant, grp, state, attempt, ?2, ?3 FROM jobs WHERE id = ?1`)
)

// progressCols are the columns of job_progress Get reads after jobCols.
const progressCols = `, job_progress.percent, job_progress.data, job_progress.reported_at`

// progressJoin joins a job with its progress, for Get.
const progressJoin = ` LEFT JOIN job_progress ON job_progress.job_id = jobs.id`

// SetProgress implements backend.ProgressBackend: one write that checks the
// lease, records p and, with the event log on, logs it.
func (b *Backend) SetProgress(ctx context.Context, id, token string, p queue.JobProgress) error {
	rid, err := parseID(id)
	if err != nil {
		return err
	}
	now := b.now()
	p.UpdatedAt = fromNanos(now)
	var pct sql.NullFloat64
	if p.Percent != nil {
		pct = sql.NullFloat64{Float64: *p.Percent, Valid: true}
	}
	var data sql.NullString
	if len(p.Data) > 0 {
		data = sql.NullString{String: string(p.Data), Valid: true}
	}
	return b.write(ctx, "set progress", func(tx *wtx) error {
		var st, tok string
		err := tx.queryRow(qFence, rid).Scan(&st, &tok)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return queue.ErrNotFound
		case err != nil:
			return err
		case st != string(queue.StateActive) || tok != token:
			return queue.ErrLeaseLost
		}
		if _, err := tx.exec(qPutProgress, rid, pct, data, now); err != nil {
			return err
		}
		if !b.events {
			return nil
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
		_, err = tx.exec(qLogProgress, rid, string(ev), now)
		return err
	})
}

// progressScan reads the progress columns Get appends to jobCols.
type progressScan struct {
	s    scanner
	pct  sql.NullFloat64
	data sql.NullString
	at   sql.NullInt64
}

func (p *progressScan) Scan(dest ...any) error {
	return p.s.Scan(append(dest, &p.pct, &p.data, &p.at)...)
}

// progress returns the scanned progress, nil when the job has none.
func (p *progressScan) progress() *queue.JobProgress {
	if !p.at.Valid {
		return nil
	}
	out := &queue.JobProgress{UpdatedAt: fromNanos(p.at.Int64)}
	if p.pct.Valid {
		v := p.pct.Float64
		out.Percent = &v
	}
	if p.data.Valid {
		out.Data = json.RawMessage(p.data.String)
	}
	return out
}
