package pgqueue

import (
	"database/sql"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// jobColNames lists the columns scanJob reads, in order.
var jobColNames = []string{"id", "queue", "kind", "payload", "tenant", "grp", "priority", "run_at",
	"max_attempts", "timeout", "unique_key", "unique_until", "state", "attempt", "stalls",
	"last_error", "errors", "result", "cancel_requested", "lease_until", "worker_id",
	"created_at", "updated_at", "started_at", "finished_at", "webhook", "trace",
	"flow", "flow_node", "depends_on", "on_parent_failure"}

// jobCols is jobColNames for a select list, each prefixed with alias and
// a dot when alias is not empty.
func jobCols(alias string) string { return colList(alias, jobColNames) }

// colList lists names, each qualified by alias unless it is empty.
func colList(alias string, names []string) string {
	if alias == "" {
		return strings.Join(names, ", ")
	}
	cols := make([]string, len(names))
	for i, c := range names {
		cols[i] = alias + "." + c
	}
	return strings.Join(cols, ", ")
}

// scanner is a row of pgx or of database/sql.
type scanner interface{ Scan(dest ...any) error }

// scanJob reads the columns of jobCols, then extra, from s. The
// destinations are plain Go and database/sql types, so the same code
// reads rows of pgx and of database/sql (EnqueueSQLTx).
func scanJob(s scanner, extra ...any) (*queue.Job, error) {
	return newJobScan(extra...).scan(s)
}

// jobScan holds the destinations of jobCols (and extra ones), so that a
// result of many rows (a lease) reads them all into one set instead of
// allocating some twenty destinations a row.
type jobScan struct {
	j                                queue.Job
	id, runAt, timeout               int64
	uniqueKey, workerID              sql.NullString
	uniqueUntil, leaseUntil          sql.NullInt64
	errs, state, webhook, trace      string
	deps, onParentFailure            string
	created, updated, started, ended int64
	dest                             []any
}

func newJobScan(extra ...any) *jobScan {
	x := &jobScan{}
	x.dest = append([]any{&x.id, &x.j.Queue, &x.j.Kind, &x.j.Payload, &x.j.Tenant, &x.j.Group, &x.j.Priority, &x.runAt,
		&x.j.MaxAttempts, &x.timeout, &x.uniqueKey, &x.uniqueUntil, &x.state, &x.j.Attempt, &x.j.Stalls,
		&x.j.LastError, &x.errs, &x.j.Result, &x.j.CancelRequested, &x.leaseUntil, &x.workerID,
		&x.created, &x.updated, &x.started, &x.ended, &x.webhook, &x.trace, &x.j.Flow, &x.j.FlowNode, &x.deps,
		&x.onParentFailure}, extra...)
	return x
}

// scan reads the next row of s into a new job.
func (x *jobScan) scan(s scanner) (*queue.Job, error) {
	x.j = queue.Job{} // the slices scanned into must be the new job's own
	if err := s.Scan(x.dest...); err != nil {
		return nil, err
	}
	j := x.j
	w, err := backend.DecodeWebhook(x.webhook)
	if err != nil {
		return nil, err
	}
	j.Webhook, j.Trace = w, x.trace
	if x.deps != "" {
		j.DependsOn = strings.Split(x.deps, ",")
	}
	j.OnParentFailure = queue.ParentFailure(x.onParentFailure)
	j.ID = strconv.FormatInt(x.id, 10)
	j.State = queue.State(x.state)
	j.RunAt = fromNanos(x.runAt)
	j.Timeout = time.Duration(x.timeout)
	j.UniqueKey = x.uniqueKey.String
	if x.uniqueUntil.Valid {
		j.UniqueFor = time.Duration(x.uniqueUntil.Int64 - x.created)
	}
	if x.errs != "" && x.errs != "[]" {
		if err := json.Unmarshal([]byte(x.errs), &j.Errors); err != nil {
			return nil, err
		}
	}
	if j.Payload == nil {
		j.Payload = []byte{}
	}
	j.LeaseUntil = fromNanos(x.leaseUntil.Int64)
	j.WorkerID = x.workerID.String
	j.CreatedAt = fromNanos(x.created)
	j.UpdatedAt = fromNanos(x.updated)
	j.StartedAt = fromNanos(x.started)
	j.FinishedAt = fromNanos(x.ended)
	return &j, nil
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func toNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// after is the store time d after now, with d bounded to [0,
// MaxDuration], so a huge duration can never overflow into the past.
func after(now int64, d time.Duration) int64 {
	return now + int64(min(max(d, 0), queue.MaxDuration))
}

// parseID turns a job id back into its row id; a malformed id names no job.
func parseID(id string) (int64, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return 0, queue.ErrNotFound
	}
	return n, nil
}

// nullString is NULL for the empty string.
func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// appendError adds e to the history, keeping the newest MaxErrorHistory,
// and returns it as JSON.
func appendError(hist []queue.AttemptError, e queue.AttemptError) (string, error) {
	hist = append(hist, e)
	if n := len(hist) - queue.MaxErrorHistory; n > 0 {
		hist = hist[n:]
	}
	out, err := json.Marshal(hist)
	return string(out), err
}
