package sqlitequeue

import (
	"context"
	"database/sql"
	"errors"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

var (
	qRetryRow = hot(`SELECT queue, tenant, grp, priority, state, unique_key, vstart FROM jobs WHERE id = ?`)
	// The job keeps its state here; promote moves it to pending or
	// waiting, so the state changes once and the count triggers fire once.
	qRetryReset = hot(`UPDATE jobs SET attempt = 0, stalls = 0, result = NULL, cancel_requested = 0,
		finished_at = 0, run_at = ?1, updated_at = ?1, hold = '', wait_until = 0, ` + clearLease + ` WHERE id = ?2`)
	// qRetryParent finds a parent that holds job ?1 back: one not
	// completed, unless it ended and the job runs anyway; an ended one
	// first, the way to bring the job back being to retry it.
	qRetryParent = hot(`SELECT p.id, p.state FROM job_deps d JOIN jobs p ON p.id = d.parent JOIN jobs c ON c.id = d.child
		WHERE d.child = ?1 AND p.state != 'completed'
		AND NOT (c.on_parent_failure = 'run' AND p.state IN ('failed', 'cancelled'))
		ORDER BY p.state IN ('failed', 'cancelled') DESC, p.id LIMIT 1`)
)

// Retry implements backend.Retrier. The job becomes ready through promote,
// the step Lease uses for due jobs, so its tenant's limit and pause apply
// exactly as they do to any job that becomes ready.
func (b *Backend) Retry(ctx context.Context, id string) (*queue.Job, error) {
	rid, err := sqlstore.ParseID(id)
	if err != nil {
		return nil, err
	}
	var j *queue.Job
	err = b.writeSched(ctx, "retry", func(s *sched) error {
		var q, tenant, grp, state string
		var priority int
		var key *string
		var start sql.NullInt64
		err := s.tx.queryRow(qRetryRow, rid).Scan(&q, &tenant, &grp, &priority, &state, &key, &start)
		if errors.Is(err, sql.ErrNoRows) {
			return queue.ErrNotFound
		} else if err != nil {
			return err
		}
		parent := func() sqlstore.Row { return s.tx.queryRow(qRetryParent, rid) }
		if err := sqlstore.RetryChecks(id, q, queue.State(state), grp, key, parent, s.uniqueHolder); err != nil {
			return err
		}
		if _, err := s.tx.exec(qRetryReset, s.now, rid); err != nil {
			return err
		}
		if err := s.promote(rid, q, tenant, grp, priority, start); err != nil {
			return err
		}
		j, err = sqlstore.ScanJob(s.tx.queryRow(qGet, rid))
		return err
	})
	if err != nil {
		return nil, err
	}
	return j, nil
}

// uniqueHolder returns the job that holds unique key key of queue q, nil
// for none.
func (s *sched) uniqueHolder(q, key string) (*queue.Job, error) {
	holder, err := sqlstore.ScanJob(s.tx.queryRow(findUnique, q, key, s.now))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return holder, err
}
