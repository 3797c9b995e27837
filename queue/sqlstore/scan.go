package sqlstore

import (
	"database/sql"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// JobColumns lists the columns of the jobs table that ScanJob reads, in
// order; both dialects name them alike.
var JobColumns = []string{"id", "queue", "kind", "payload", "tenant", "grp", "priority", "run_at",
	"max_attempts", "timeout", "unique_key", "unique_until", "state", "attempt", "stalls",
	"last_error", "errors", "result", "cancel_requested", "lease_until", "worker_id",
	"created_at", "updated_at", "started_at", "finished_at", "webhook", "trace",
	"flow", "flow_node", "depends_on", "on_parent_failure"}

// JobCols is JobColumns for a select list, each prefixed with alias and a
// dot when alias is not empty.
func JobCols(alias string) string { return ColList(alias, JobColumns) }

// ColList lists names for a select list, each qualified by alias unless
// it is empty.
func ColList(alias string, names []string) string {
	if alias == "" {
		return strings.Join(names, ", ")
	}
	cols := make([]string, len(names))
	for i, c := range names {
		cols[i] = alias + "." + c
	}
	return strings.Join(cols, ", ")
}

// ScanJob reads the columns of JobCols, then extra, from r. The
// destinations are plain Go and database/sql types, so the same code
// reads rows of pgx and of database/sql.
func ScanJob(r Row, extra ...any) (*queue.Job, error) {
	return NewJobScan(extra...).Scan(r)
}

// JobScan holds the destinations of JobCols (and extra ones), so that a
// result of many rows (a lease) reads them all into one set instead of
// allocating some twenty destinations a row.
type JobScan struct {
	j                                queue.Job
	id, runAt, timeout               int64
	uniqueKey, workerID              sql.NullString
	uniqueUntil, leaseUntil          sql.NullInt64
	errs, state, webhook, trace      string
	deps, onParentFailure            string
	created, updated, started, ended int64
	dest                             []any
}

// NewJobScan returns the destinations of JobCols followed by extra.
func NewJobScan(extra ...any) *JobScan {
	x := &JobScan{}
	x.dest = append([]any{&x.id, &x.j.Queue, &x.j.Kind, &x.j.Payload, &x.j.Tenant, &x.j.Group, &x.j.Priority, &x.runAt,
		&x.j.MaxAttempts, &x.timeout, &x.uniqueKey, &x.uniqueUntil, &x.state, &x.j.Attempt, &x.j.Stalls,
		&x.j.LastError, &x.errs, &x.j.Result, &x.j.CancelRequested, &x.leaseUntil, &x.workerID,
		&x.created, &x.updated, &x.started, &x.ended, &x.webhook, &x.trace, &x.j.Flow, &x.j.FlowNode, &x.deps,
		&x.onParentFailure}, extra...)
	return x
}

// RowID is the row id of the job Scan read last.
func (x *JobScan) RowID() int64 { return x.id }

// Scan reads the next row of r into a new job.
func (x *JobScan) Scan(r Row) (*queue.Job, error) {
	x.j = queue.Job{} // the slices scanned into must be the new job's own
	if err := r.Scan(x.dest...); err != nil {
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
	j.RunAt = FromNanos(x.runAt)
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
	j.LeaseUntil = FromNanos(x.leaseUntil.Int64)
	j.WorkerID = x.workerID.String
	j.CreatedAt = FromNanos(x.created)
	j.UpdatedAt = FromNanos(x.updated)
	j.StartedAt = FromNanos(x.started)
	j.FinishedAt = FromNanos(x.ended)
	return &j, nil
}

// FromNanos is the time of a stored Unix-nanosecond column; 0 is the zero
// time.
func FromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// ToNanos is t as stored: Unix nanoseconds, 0 for the zero time.
func ToNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// NanosAfter is the store time d after now, with d bounded to [0,
// MaxDuration], so a huge duration from a caller (a lease, a retry delay,
// a pause) can never overflow into the past and run the job at once.
// Redis bounds its script arguments the same way, so the stores agree.
func NanosAfter(now int64, d time.Duration) int64 {
	return now + int64(min(max(d, 0), queue.MaxDuration))
}

// ParseID turns a job id back into its row id; a malformed id names no
// job.
func ParseID(id string) (int64, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return 0, queue.ErrNotFound
	}
	return n, nil
}

// NullString is NULL for the empty string.
func NullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// AppendError adds e to the history, keeping the newest MaxErrorHistory,
// and returns it as JSON.
func AppendError(hist []queue.AttemptError, e queue.AttemptError) (string, error) {
	hist = append(hist, e)
	if n := len(hist) - queue.MaxErrorHistory; n > 0 {
		hist = hist[n:]
	}
	out, err := json.Marshal(hist)
	return string(out), err
}
