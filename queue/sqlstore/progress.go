package sqlstore

import (
	"database/sql"
	"encoding/json"

	"github.com/sluicehq/sluice/queue"
)

// ProgressStatements are a dialect's statements of job progress
// (backend.ProgressBackend) and of reading a job with it.
type ProgressStatements struct {
	// Fence returns state, lease token ('' for none), queue, kind,
	// tenant, grp and attempt of job $1, locking its row where the
	// dialect locks rows so it keeps its state until the report commits.
	Fence string
	// Put records job $1's progress: percent $2, data $3, at $4.
	Put string
	// Get returns JobCols of job $1, then percent, data and reported_at
	// of its progress (NULL for none).
	Get string
}

// SetProgress records p for job id (row rid) if token holds its lease,
// in tx, one transaction; log, when not nil, then logs the report's event
// in tx.
func SetProgress(tx Tx, st *ProgressStatements, rid int64, id, token string, p queue.JobProgress, now int64, log func(queue.Event) error) error {
	var state, tok string
	e := queue.Event{Type: queue.EventJobProgress, JobID: id, State: queue.StateActive}
	err := tx.QueryRow(st.Fence, rid).Scan(&state, &tok, &e.Queue, &e.Kind, &e.Tenant, &e.Group, &e.Attempt)
	switch {
	case IsNoRows(err):
		return queue.ErrNotFound
	case err != nil:
		return err
	case state != string(queue.StateActive) || tok != token:
		return queue.ErrLeaseLost
	}
	var pct sql.NullFloat64
	if p.Percent != nil {
		pct = sql.NullFloat64{Float64: *p.Percent, Valid: true}
	}
	var data sql.NullString
	if len(p.Data) > 0 {
		data = sql.NullString{String: string(p.Data), Valid: true}
	}
	if _, err := tx.Exec(st.Put, rid, pct, data, now); err != nil {
		return err
	}
	if log == nil {
		return nil
	}
	// The event carries the report as workers send it; its time is the
	// event's own.
	ev, err := json.Marshal(struct {
		Percent *float64        `json:"percent,omitempty"`
		Data    json.RawMessage `json:"data,omitempty"`
	}{p.Percent, p.Data})
	if err != nil {
		return err
	}
	e.Data = ev
	return log(e)
}

// ReadJob reads job rid with its latest progress; ErrNotFound when there
// is no such job.
func ReadJob(tx Tx, st *ProgressStatements, rid int64) (*queue.Job, error) {
	var (
		pct  sql.NullFloat64
		data sql.NullString
		at   sql.NullInt64
	)
	j, err := ScanJob(tx.QueryRow(st.Get, rid), &pct, &data, &at)
	if IsNoRows(err) {
		return nil, queue.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if at.Valid {
		j.Progress = &queue.JobProgress{UpdatedAt: FromNanos(at.Int64)}
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

// SecretStatements are a dialect's statements of tenant secrets
// (backend.TenantSecrets).
type SecretStatements struct {
	// Set stores secret $2 of tenant $1 at $3; Delete deletes tenant $1's
	// secret; Get returns it.
	Set, Delete, Get string
}

// SetTenantSecret stores tenant's secret, or deletes it when secret is
// empty.
func SetTenantSecret(tx Tx, st *SecretStatements, tenant, secret string, now int64) error {
	if err := queue.ValidateSecret(tenant, secret); err != nil {
		return err
	}
	var err error
	if secret == "" {
		_, err = tx.Exec(st.Delete, tenant)
	} else {
		_, err = tx.Exec(st.Set, tenant, secret, now)
	}
	return err
}

// TenantSecret reads tenant's secret, "" for none.
func TenantSecret(tx Tx, st *SecretStatements, tenant string) (string, error) {
	var secret string
	err := tx.QueryRow(st.Get, tenant).Scan(&secret)
	if IsNoRows(err) {
		return "", nil
	}
	return secret, err
}
