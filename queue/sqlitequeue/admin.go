package sqlitequeue

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

var (
	qState        = hot(`SELECT state FROM jobs WHERE id = ?`)
	qCancelActive = hot(`UPDATE jobs SET cancel_requested = 1, updated_at = ? WHERE id = ?`)
	qCancelIdle   = hot(`UPDATE jobs SET state = 'cancelled', finished_at = ?1, updated_at = ?1 WHERE id = ?2`)
	qGet          = hot(`SELECT ` + jobCols + ` FROM jobs WHERE id = ?`)
)

// Get implements backend.Backend.
func (b *Backend) Get(ctx context.Context, id string) (*queue.Job, error) {
	rid, err := sqlstore.ParseID(id)
	if err != nil {
		return nil, err
	}
	if b.closed.Load() {
		return nil, b.wrap("get", queue.ErrClosed)
	}
	j, err := sqlstore.ReadJob(sqlstore.OnSQL{Ctx: ctx, Q: b.r}, progressQ, rid)
	return j, b.wrap("get", err)
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// Stats implements backend.Backend. It counts from the (queue, state) index
// and lists a paused queue even when it has no jobs.
func (b *Backend) Stats(ctx context.Context) ([]queue.QueueStats, error) {
	if b.closed.Load() {
		return nil, b.wrap("stats", queue.ErrClosed)
	}
	tx := sqlstore.OnSQL{Ctx: ctx, Q: b.r}
	paused, err := sqlstore.QueuePauses(tx, `SELECT queue, paused_until FROM queue_sched WHERE paused_until > ?`, b.now())
	if err != nil {
		return nil, b.wrap("stats", err)
	}
	out, err := sqlstore.QueueStats(tx, `SELECT queue, state, count(*) FROM jobs GROUP BY queue, state`, paused)
	return out, b.wrap("stats", err)
}

// Cancel implements backend.Backend.
func (b *Backend) Cancel(ctx context.Context, id string) (*queue.Job, error) {
	rid, err := sqlstore.ParseID(id)
	if err != nil {
		return nil, err
	}
	now := b.now()
	var j *queue.Job
	err = b.write(ctx, "cancel", func(tx *wtx) error {
		var state string
		err := tx.queryRow(qState, rid).Scan(&state)
		if errors.Is(err, sql.ErrNoRows) {
			return queue.ErrNotFound
		} else if err != nil {
			return err
		}
		switch queue.State(state) {
		case queue.StateActive:
			_, err = tx.exec(qCancelActive, now, rid)
		case queue.StateScheduled, queue.StatePending, queue.StateWaiting, queue.StateRetrying, queue.StateBlocked:
			if _, err = tx.exec(qCancelIdle, now, rid); err == nil {
				err = b.emitState(tx, rid, queue.StateCancelled, now)
			}
			if err == nil {
				err = b.settle(tx, rid, now)
			}
		}
		if err != nil {
			return err
		}
		j, err = sqlstore.ScanJob(tx.queryRow(qGet, rid))
		return err
	})
	if err != nil {
		return nil, err
	}
	return sqlstore.CancelFinished(j)
}

// queueFilter returns " AND queue IN (...)" and its args, or nothing for
// all queues.
func queueFilter(queues []string) (string, []any) {
	if len(queues) == 0 {
		return "", nil
	}
	args := make([]any, len(queues))
	for i, q := range queues {
		args[i] = q
	}
	return " AND queue IN (" + placeholders(len(queues)) + ")", args
}

// RescueExpired implements backend.Backend.
func (b *Backend) RescueExpired(ctx context.Context, req backend.RescueRequest) (backend.RescueResult, error) {
	limit, maxStalls := sqlstore.RescueLimits(req)
	now := b.now()
	var res backend.RescueResult
	var requeued map[string]bool
	err := b.write(ctx, "rescue", func(tx *wtx) error {
		qf, qargs := queueFilter(req.Queues)
		args := append([]any{now}, qargs...)
		expired, err := sqlstore.ScanJobs(tx.Query(`SELECT `+jobCols+` FROM jobs WHERE state = 'active'
			AND lease_until < ?`+qf+` ORDER BY lease_until LIMIT ?`, append(args, limit)...))
		if err != nil {
			return err
		}
		// The jobs of tenants or groups are moved as they are placed, and
		// settled once at the end (sqlstore's SettleRescued).
		var scoped []*queue.Job
		outcome := map[*queue.Job]sqlstore.Stalled{}
		res, requeued, err = sqlstore.RescueJobs(expired, now, maxStalls, func(_ int, j *queue.Job, r sqlstore.Stalled) error {
			if j.Tenant != "" || j.Group != "" {
				scoped, outcome[j] = append(scoped, j), r
				return nil
			}
			return b.rescueOne(tx, j, r, now)
		})
		if err != nil || len(scoped) == 0 {
			return err
		}
		s := b.newSched(tx, now)
		err = s.SettleRescued(scoped, func(j *queue.Job) (queue.State, bool, error) {
			r := outcome[j]
			return r.Next, true, b.rescueOne(tx, j, r, now)
		})
		if err != nil {
			return err
		}
		return s.flush()
	})
	if err != nil {
		return backend.RescueResult{}, err
	}
	for q := range requeued {
		b.notify(q)
	}
	return res, nil
}

// rescueOne moves expired job j out of active as r decides, with its
// event.
func (b *Backend) rescueOne(tx *wtx, j *queue.Job, r sqlstore.Stalled, now int64) error {
	id := mustID(j.ID)
	var err error
	switch r.Next {
	case queue.StateCancelled:
		_, err = tx.exec(`UPDATE jobs SET state = 'cancelled', stalls = ?1,
			attempt = attempt - 1, finished_at = ?2, updated_at = ?2, `+clearLease+` WHERE id = ?3`, r.Stalls, now, id)
	case queue.StateFailed:
		_, err = tx.exec(`UPDATE jobs SET state = 'failed', stalls = ?1, attempt = attempt - 1,
			last_error = ?2, errors = ?3, finished_at = ?4, updated_at = ?4, `+clearLease+` WHERE id = ?5`,
			r.Stalls, r.Error, r.Errors, now, id)
	default:
		_, err = tx.exec(`UPDATE jobs SET state = 'pending', stalls = ?1,
			attempt = attempt - 1, updated_at = ?2, `+clearLease+` WHERE id = ?3`, r.Stalls, now, id)
	}
	if err != nil {
		return err
	}
	return b.emitJob(tx, j.ID, r.Next, now)
}
