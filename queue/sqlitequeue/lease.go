package sqlitequeue

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

var (
	qGiveBack = hot(`UPDATE jobs SET
			state = CASE WHEN cancel_requested THEN 'cancelled' ELSE ?1 END,
			finished_at = CASE WHEN cancel_requested THEN ?2 ELSE 0 END,
			run_at = CASE WHEN cancel_requested THEN run_at ELSE ?3 END,
			attempt = attempt - 1, updated_at = ?2, ` + clearLease + `
			WHERE id = ?4 AND state = 'active' AND lease_token = ?5 RETURNING state, queue, tenant, grp`)
	qExists = hot(`SELECT 1 FROM jobs WHERE id = ?`)
	qExtend = hot(`UPDATE jobs SET lease_until = ?, updated_at = ?
	WHERE id = ? AND state = 'active' AND lease_token = ? RETURNING lease_until, cancel_requested`)
	qComplete = hot(`UPDATE jobs SET state = 'completed', result = ?,
	finished_at = ?, updated_at = ?, ` + clearLease + `
	WHERE id = ? AND state = 'active' AND lease_token = ? RETURNING tenant, grp,
	(SELECT coalesce(sum(n), 0) FROM scope_counts WHERE kind = 't' AND name = jobs.tenant AND state = 'waiting')`)
	qHolder = hot(`SELECT ` + jobCols + ` FROM jobs
	WHERE id = ? AND state = 'active' AND lease_token = ?`)
	qFail = hot(`UPDATE jobs SET state = ?, last_error = ?, errors = ?,
	run_at = ?, finished_at = ?, updated_at = ?, ` + clearLease + ` WHERE id = ?`)
)

// activate makes the chosen pending jobs (a JSON array of ids) active in
// one statement. Each gets token prefix + "." + id: fresh for every lease
// call and distinct per job.
var activate = hot(`UPDATE jobs SET state = 'active', attempt = attempt + 1,
	lease_token = ?1 || '.' || id, lease_until = ?2, worker_id = ?3, started_at = ?4, updated_at = ?4
	WHERE id IN (SELECT value FROM json_each(?5)) AND state = 'pending'`)

var leased = hot(`SELECT ` + jobCols + `, lease_token FROM jobs
	WHERE id IN (SELECT value FROM json_each(?)) ORDER BY band, vrank, id`)

// clearLease is the SET part shared by every transition out of active.
const clearLease = `lease_token = NULL, lease_until = NULL, worker_id = NULL`

// Lease implements backend.Backend.
func (b *Backend) Lease(ctx context.Context, req backend.LeaseRequest) ([]queue.Lease, error) {
	if len(req.Queues) == 0 || req.Max < 1 || req.LeaseFor <= 0 {
		return nil, backend.InvalidArgument(queue.Field("", "LeaseRequest"), "needs queues, Max >= 1 and LeaseFor > 0, got %d queues, Max %d, LeaseFor %s",
			len(req.Queues), req.Max, req.LeaseFor)
	}
	var out []queue.Lease
	err := b.writeSched(ctx, "lease", func(s *sched) error {
		out = out[:0]
		return s.Lease(req.Queues, req.Max, func(picked []sqlstore.Cand) error {
			if len(picked) == 0 {
				return nil
			}
			ids := make([]int64, len(picked))
			v := map[string]int64{} // each queue's virtual time: its largest start leased
			for i, c := range picked {
				ids[i] = c.ID
				if cur, ok := v[c.Queue]; !ok || c.Start > cur {
					v[c.Queue] = c.Start
				}
			}
			var err error
			if out, err = activateJobs(s.tx, ids, req, s.now); err != nil {
				return err
			}
			for q, start := range v {
				if _, err := s.tx.exec(qAdvanceV, q, start); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

var qAdvanceV = hot(`INSERT INTO queue_sched (queue, vtime) VALUES (?1, ?2)
	ON CONFLICT DO UPDATE SET vtime = max(vtime, ?2)`)

// activateJobs leases the jobs ids and reads them back.
func activateJobs(tx *wtx, ids []int64, req backend.LeaseRequest, now int64) ([]queue.Lease, error) {
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	prefix, err := sqlstore.LeaseTokenPrefix()
	if err != nil {
		return nil, err
	}
	if _, err := tx.exec(activate, prefix, sqlstore.NanosAfter(now, req.LeaseFor), req.WorkerID, now, string(list)); err != nil {
		return nil, err
	}
	rows, err := tx.query(leased, string(list))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]queue.Lease, 0, len(ids))
	for rows.Next() {
		var tok string
		j, err := sqlstore.ScanJob(scanPlus{rows, &tok})
		if err != nil {
			return nil, err
		}
		out = append(out, queue.Lease{Job: j, Token: tok})
	}
	return out, rows.Err()
}

// scanPlus scans the job columns followed by extra destinations.
type scanPlus struct {
	s     scanner
	extra *string
}

func (p scanPlus) Scan(dest ...any) error { return p.s.Scan(append(dest, p.extra)...) }

// fenced classifies a transition that matched no row: the job is missing,
// or the token no longer holds it.
func fenced(tx *wtx, id int64) error {
	var one int
	err := tx.queryRow(qExists, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return queue.ErrNotFound
	}
	if err != nil {
		return err
	}
	return queue.ErrLeaseLost
}

// Extend implements backend.Backend.
func (b *Backend) Extend(ctx context.Context, id, token string, leaseFor time.Duration) (backend.LeaseStatus, error) {
	rid, err := sqlstore.ParseID(id)
	if err != nil {
		return backend.LeaseStatus{}, err
	}
	var st backend.LeaseStatus
	now := b.now()
	err = b.write(ctx, "extend", func(tx *wtx) error {
		var until int64
		var cancel int
		err := tx.queryRow(qExtend,
			sqlstore.NanosAfter(now, leaseFor), now, rid, token).Scan(&until, &cancel)
		if errors.Is(err, sql.ErrNoRows) {
			return fenced(tx, rid)
		}
		st = backend.LeaseStatus{Until: sqlstore.FromNanos(until), CancelRequested: cancel != 0}
		return err
	})
	return st, err
}

// Complete implements backend.Backend.
func (b *Backend) Complete(ctx context.Context, id, token string, result []byte) error {
	rid, err := sqlstore.ParseID(id)
	if err != nil {
		return err
	}
	now := b.now()
	return b.write(ctx, "complete", func(tx *wtx) error {
		var tenant, grp string
		var waiting int64 // the tenant's waiting jobs: with none, its freed slot is nobody's
		err := tx.queryRow(qComplete, result, now, now, rid, token).Scan(&tenant, &grp, &waiting)
		if errors.Is(err, sql.ErrNoRows) {
			return fenced(tx, rid)
		} else if err != nil {
			return err
		}
		if err := b.emitState(tx, rid, queue.StateCompleted, now); err != nil {
			return err
		}
		if grp == "" && waiting == 0 {
			return nil
		}
		return b.settleFinal(tx, rid, tenant, grp, queue.StateCompleted, now)
	})
}

// holder reads the job held by token inside tx, or returns the fencing error.
func holder(tx *wtx, id int64, token string) (*queue.Job, error) {
	j, err := sqlstore.ScanJob(tx.queryRow(qHolder, id, token))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fenced(tx, id)
	}
	return j, err
}

// Fail implements backend.Backend.
func (b *Backend) Fail(ctx context.Context, id, token string, f backend.Failure) (queue.State, error) {
	f.Error = queue.StorableError(f.Error)
	rid, err := sqlstore.ParseID(id)
	if err != nil {
		return "", err
	}
	var next queue.State
	var q string
	now := b.now()
	err = b.write(ctx, "fail", func(tx *wtx) error {
		j, err := holder(tx, rid, token)
		if err != nil {
			return err
		}
		q = j.Queue
		var hist string
		var finished, runAt int64
		next, hist, finished, runAt, err = sqlstore.FailOutcome(f, j.Attempt, j.MaxAttempts, j.CancelRequested, j.Errors, now)
		if err != nil {
			return err
		}
		if next.Final() {
			runAt = sqlstore.ToNanos(j.RunAt)
		}
		if _, err = tx.exec(qFail,
			string(next), f.Error, hist, runAt, finished, now, rid); err != nil {
			return err
		}
		if err := b.emitState(tx, rid, next, now); err != nil {
			return err
		}
		return b.settleFinal(tx, rid, j.Tenant, j.Group, next, now)
	})
	if err != nil {
		return "", err
	}
	if next == queue.StateRetrying && f.RetryIn <= 0 {
		b.notify(q)
	}
	return next, nil
}

// Snooze implements backend.Backend.
func (b *Backend) Snooze(ctx context.Context, id, token string, d time.Duration) (queue.State, error) {
	return b.giveBack(ctx, "snooze", id, token, sqlstore.SnoozeState(d), d)
}

// Requeue implements backend.Backend.
func (b *Backend) Requeue(ctx context.Context, id, token string) (queue.State, error) {
	return b.giveBack(ctx, "requeue", id, token, queue.StatePending, 0)
}

// giveBack ends an attempt without spending it: the job goes to next
// (cancelled instead when a cancel was requested) with RunAt = now + d.
func (b *Backend) giveBack(ctx context.Context, op, id, token string, next queue.State, d time.Duration) (queue.State, error) {
	rid, err := sqlstore.ParseID(id)
	if err != nil {
		return "", err
	}
	now := b.now()
	var got, q, tenant, grp string
	err = b.write(ctx, op, func(tx *wtx) error {
		err := tx.queryRow(qGiveBack,
			string(next), now, sqlstore.NanosAfter(now, d), rid, token).Scan(&got, &q, &tenant, &grp)
		if errors.Is(err, sql.ErrNoRows) {
			return fenced(tx, rid)
		} else if err != nil {
			return err
		}
		if err := b.emitState(tx, rid, queue.State(got), now); err != nil {
			return err
		}
		if tenant == "" && grp == "" {
			return nil
		}
		if err := b.settle(tx, rid, now); err != nil {
			return err
		}
		return tx.queryRow(qState, rid).Scan(&got) // settling may have made it wait
	})
	if err != nil {
		return "", err
	}
	if queue.State(got) == queue.StatePending {
		b.notify(q)
	}
	return queue.State(got), nil
}
