package sqlitequeue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

var (
	qState        = hot(`SELECT state FROM jobs WHERE id = ?`)
	qCancelActive = hot(`UPDATE jobs SET cancel_requested = 1, updated_at = ? WHERE id = ?`)
	qCancelIdle   = hot(`UPDATE jobs SET state = 'cancelled', finished_at = ?1, updated_at = ?1 WHERE id = ?2`)
	qGet          = hot(`SELECT ` + jobCols + ` FROM jobs WHERE id = ?`)
)

// Get implements backend.Backend.
func (b *Backend) Get(ctx context.Context, id string) (*queue.Job, error) {
	rid, err := parseID(id)
	if err != nil {
		return nil, err
	}
	if b.closed.Load() {
		return nil, b.wrap("get", queue.ErrClosed)
	}
	ps := &progressScan{s: b.r.QueryRowContext(ctx, `SELECT `+jobCols+progressCols+` FROM jobs`+progressJoin+` WHERE id = ?`, rid)}
	j, err := scanJob(ps)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, queue.ErrNotFound
	}
	if j != nil {
		j.Progress = ps.progress()
	}
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
	rows, err := b.r.QueryContext(ctx, `SELECT queue, state, count(*) FROM jobs GROUP BY queue, state`)
	if err != nil {
		return nil, b.wrap("stats", err)
	}
	defer rows.Close()
	byQueue := map[string]map[queue.State]int64{}
	for rows.Next() {
		var q, s string
		var n int64
		if err := rows.Scan(&q, &s, &n); err != nil {
			return nil, b.wrap("stats", err)
		}
		if byQueue[q] == nil {
			byQueue[q] = map[queue.State]int64{}
		}
		byQueue[q][queue.State(s)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, b.wrap("stats", err)
	}
	paused, err := b.pausedQueues(ctx)
	if err != nil {
		return nil, b.wrap("stats", err)
	}
	// A paused queue is listed without jobs too: the pause is what an
	// operator must see to lift it.
	for q := range paused {
		if byQueue[q] == nil {
			byQueue[q] = map[queue.State]int64{}
		}
	}
	out := make([]queue.QueueStats, 0, len(byQueue))
	for q, c := range byQueue {
		out = append(out, queue.QueueStats{Queue: q, Counts: c, PausedUntil: paused[q]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Queue < out[j].Queue })
	return out, nil
}

// pausedQueues returns the end of every queue pause in force.
func (b *Backend) pausedQueues(ctx context.Context) (map[string]time.Time, error) {
	rows, err := b.r.QueryContext(ctx, `SELECT queue, paused_until FROM queue_sched WHERE paused_until > ?`, b.now())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var q string
		var until int64
		if err := rows.Scan(&q, &until); err != nil {
			return nil, err
		}
		out[q] = fromNanos(until)
	}
	return out, rows.Err()
}

// Cancel implements backend.Backend.
func (b *Backend) Cancel(ctx context.Context, id string) (*queue.Job, error) {
	rid, err := parseID(id)
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
		j, err = scanJob(tx.queryRow(qGet, rid))
		return err
	})
	if err != nil {
		return nil, err
	}
	if j.State == queue.StateCompleted || j.State == queue.StateFailed {
		return j, queue.ErrJobFinished
	}
	return j, nil
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
	maxStalls := req.MaxStalls
	if maxStalls <= 0 {
		maxStalls = queue.DefaultMaxStalls
	}
	limit := req.Limit
	if limit <= 0 {
		limit = backend.DefaultBatchLimit
	}
	now := b.now()
	var res backend.RescueResult
	requeued := map[string]bool{}
	err := b.write(ctx, "rescue", func(tx *wtx) error {
		res = backend.RescueResult{}
		qf, qargs := queueFilter(req.Queues)
		args := append([]any{now}, qargs...)
		rows, err := tx.query(`SELECT `+jobCols+` FROM jobs WHERE state = 'active'
			AND lease_until < ?`+qf+` ORDER BY lease_until LIMIT ?`, append(args, limit)...)
		if err != nil {
			return err
		}
		var expired []*queue.Job
		for rows.Next() {
			j, err := scanJob(rows)
			if err != nil {
				rows.Close()
				return err
			}
			expired = append(expired, j)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		for _, j := range expired {
			next, err := rescueOne(tx, j, now, maxStalls)
			if err == nil {
				err = b.emitJob(tx, j.ID, next, now)
			}
			if err == nil {
				err = b.settleScoped(tx, mustID(j.ID), j.Tenant, j.Group, now)
			}
			if err != nil {
				return err
			}
			switch next {
			case queue.StatePending:
				res.Requeued++
				requeued[j.Queue] = true
			case queue.StateFailed:
				res.Failed++
			case queue.StateCancelled:
				res.Cancelled++
			}
		}
		return nil
	})
	if err != nil {
		return backend.RescueResult{}, err
	}
	for q := range requeued {
		b.notify(q)
	}
	return res, nil
}

// rescueOne moves one expired job out of active and returns its new state.
func rescueOne(tx *wtx, j *queue.Job, now int64, maxStalls int) (queue.State, error) {
	id, _ := parseID(j.ID)
	stalls := j.Stalls + 1
	switch {
	case j.CancelRequested:
		_, err := tx.exec(`UPDATE jobs SET state = 'cancelled', stalls = ?1,
			attempt = attempt - 1, finished_at = ?2, updated_at = ?2, `+clearLease+` WHERE id = ?3`, stalls, now, id)
		return queue.StateCancelled, err
	case stalls >= maxStalls:
		msg := fmt.Sprintf("queue: job stalled %d times (its lease expired before the worker finished)", stalls)
		hist, err := appendError(j.Errors, queue.AttemptError{Attempt: j.Attempt, At: fromNanos(now), Error: msg})
		if err != nil {
			return "", err
		}
		_, err = tx.exec(`UPDATE jobs SET state = 'failed', stalls = ?1, attempt = attempt - 1,
			last_error = ?2, errors = ?3, finished_at = ?4, updated_at = ?4, `+clearLease+` WHERE id = ?5`,
			stalls, msg, hist, now, id)
		return queue.StateFailed, err
	default:
		_, err := tx.exec(`UPDATE jobs SET state = 'pending', stalls = ?1,
			attempt = attempt - 1, updated_at = ?2, `+clearLease+` WHERE id = ?3`, stalls, now, id)
		return queue.StatePending, err
	}
}
