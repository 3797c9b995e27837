package sqlitequeue

import (
	"database/sql"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// jobCols lists the columns scanJob reads, in order.
const jobCols = `id, queue, kind, payload, tenant, grp, priority, run_at, max_attempts,
	timeout, unique_key, unique_until, state, attempt, stalls, last_error, errors, result,
	cancel_requested, lease_until, worker_id, created_at, updated_at, started_at, finished_at,
	webhook, trace, flow, flow_node, depends_on, on_parent_failure`

type scanner interface{ Scan(dest ...any) error }

func scanJob(s scanner) (*queue.Job, error) {
	var (
		j                                queue.Job
		id, runAt, timeout               int64
		uniqueKey, workerID              sql.NullString
		uniqueUntil, leaseUntil          sql.NullInt64
		errs                             string
		cancelReq                        int
		created, updated, started, ended int64
		state, deps                      string
		webhook, trace                   string
	)
	err := s.Scan(&id, &j.Queue, &j.Kind, &j.Payload, &j.Tenant, &j.Group, &j.Priority, &runAt,
		&j.MaxAttempts, &timeout, &uniqueKey, &uniqueUntil, &state, &j.Attempt, &j.Stalls,
		&j.LastError, &errs, &j.Result, &cancelReq, &leaseUntil, &workerID,
		&created, &updated, &started, &ended, &webhook, &trace, &j.Flow, &j.FlowNode, &deps, &j.OnParentFailure)
	if err != nil {
		return nil, err
	}
	if err := setExtras(&j.JobSpec, webhook, trace); err != nil {
		return nil, err
	}
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
	j.CancelRequested = cancelReq != 0
	j.LeaseUntil = fromNanos(leaseUntil.Int64)
	j.WorkerID = workerID.String
	j.CreatedAt = fromNanos(created)
	j.UpdatedAt = fromNanos(updated)
	j.StartedAt = fromNanos(started)
	j.FinishedAt = fromNanos(ended)
	if deps != "" {
		j.DependsOn = strings.Split(deps, ",")
	}
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

// parseID turns a job id back into its row id; a malformed id names no job.
func parseID(id string) (int64, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return 0, queue.ErrNotFound
	}
	return n, nil
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
