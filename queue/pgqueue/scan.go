package pgqueue

import (
	"database/sql"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// jobColNames lists the columns scanJob reads, in order.
var jobColNames = []string{"id", "queue", "kind", "payload", "tenant", "grp", "priority", "run_at",
	"max_attempts", "timeout", "unique_key", "unique_until", "state", "attempt", "stalls",
	"last_error", "errors", "result", "cancel_requested", "lease_until", "worker_id",
	"created_at", "updated_at", "started_at", "finished_at", "webhook", "trace",
	"flow", "flow_node", "depends_on", "on_parent_failure"}

// jobCols is jobColNames for a select list, each prefixed with alias and
// a dot when alias is not empty.
func jobCols(alias string) string {
	if alias == "" {
		return strings.Join(jobColNames, ", ")
	}
	cols := make([]string, len(jobColNames))
	for i, c := range jobColNames {
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
	var (
		j                                queue.Job
		id, runAt, timeout               int64
		uniqueKey, workerID              sql.NullString
		uniqueUntil, leaseUntil          sql.NullInt64
		errs, state, webhook, trace      string
		deps, onParentFailure            string
		created, updated, started, ended int64
	)
	dest := []any{&id, &j.Queue, &j.Kind, &j.Payload, &j.Tenant, &j.Group, &j.Priority, &runAt,
		&j.MaxAttempts, &timeout, &uniqueKey, &uniqueUntil, &state, &j.Attempt, &j.Stalls,
		&j.LastError, &errs, &j.Result, &j.CancelRequested, &leaseUntil, &workerID,
		&created, &updated, &started, &ended, &webhook, &trace, &j.Flow, &j.FlowNode, &deps, &onParentFailure}
	if err := s.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	w, err := queue.DecodeWebhook(webhook)
	if err != nil {
		return nil, err
	}
	j.Webhook, j.Trace = w, trace
	if deps != "" {
		j.DependsOn = strings.Split(deps, ",")
	}
	j.OnParentFailure = queue.ParentFailure(onParentFailure)
	j.ID = strconv.FormatInt(id, 10)
	j.State = queue.State(state)
	j.RunAt = fromNanos(runAt)
	j.Timeout = time.Duration(timeout)
	j.UniqueKey = uniqueKey.String
	if uniqueUntil.Valid {
		j.UniqueFor = time.Duration(uniqueUntil.Int64 - created)
	}
	if errs != "" && errs != "[]" {
		if err := json.Unmarshal([]byte(errs), &j.Errors); err != nil {
			return nil, err
		}
	}
	if j.Payload == nil {
		j.Payload = []byte{}
	}
	j.LeaseUntil = fromNanos(leaseUntil.Int64)
	j.WorkerID = workerID.String
	j.CreatedAt = fromNanos(created)
	j.UpdatedAt = fromNanos(updated)
	j.StartedAt = fromNanos(started)
	j.FinishedAt = fromNanos(ended)
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
