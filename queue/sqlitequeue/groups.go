package sqlitequeue

import (
	"context"
	"database/sql"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

var _ backend.GroupBackend = (*Backend)(nil)

// qGroup reads a group's row (sqlstore.GroupCols): SQLite keeps no count
// of a group's deleted jobs.
var qGroup = hot(`SELECT id, tenant, max_conc, min_interval, ttl, deadline, completion_kind, completion_queue,
	completion_payload, webhook, created_at, cancel_requested, done_at, completion_job,
	last_start, paused_until, 0, 0, 0 FROM job_groups WHERE id = ?`)

var qGroupStates = hot(`SELECT state, n FROM scope_counts WHERE kind = 'g' AND name = ?`)

// groupProgress reads a group's row and counts through tx (a read or the
// write transaction), as they are at now.
func groupProgress(tx sqlstore.Tx, id string, now int64) (*queue.GroupProgress, error) {
	g, err := sqlstore.ScanGroup(tx.QueryRow(qGroup, id))
	if err != nil {
		return nil, err
	}
	return sqlstore.GroupProgressOf(g, tx, qGroupStates, now)
}

// CreateGroup implements backend.GroupBackend (sqlstore's CreateGroup).
func (b *Backend) CreateGroup(ctx context.Context, spec queue.GroupSpec) (*queue.GroupProgress, error) {
	var p *queue.GroupProgress
	err := b.writeSched(ctx, "create group", func(s *sched) error {
		var err error
		p, err = s.CreateGroup(spec)
		return err
	})
	return p, err
}

// Group implements backend.GroupBackend. It reads the row and the counts in
// one read transaction, so they agree.
func (b *Backend) Group(ctx context.Context, id string) (*queue.GroupProgress, error) {
	if b.closed.Load() {
		return nil, b.wrap("group", queue.ErrClosed)
	}
	var p *queue.GroupProgress
	err := b.read(ctx, func(tx *sql.Tx) error {
		var err error
		p, err = groupProgress(readTx{ctx, tx}, id, b.now())
		return err
	})
	return p, b.wrap("group", err)
}

// CancelGroup implements backend.GroupBackend.
func (b *Backend) CancelGroup(ctx context.Context, id string) (*queue.GroupProgress, error) {
	var p *queue.GroupProgress
	err := b.writeSched(ctx, "cancel group", func(s *sched) error {
		if err := s.CancelGroup(id); err != nil {
			return err
		}
		var err error
		p, err = s.GroupProgress(id)
		return err
	})
	return p, err
}

var (
	// A group goes once its retention has passed since it ended and its
	// jobs are gone: until then it holds its jobs' end (see Cleanup).
	qOldGroups = hot(`DELETE FROM job_groups WHERE id IN (SELECT id FROM job_groups g
		WHERE ended_at > 0 AND ended_at <= ?
		AND NOT EXISTS (SELECT 1 FROM jobs WHERE grp = g.id AND grp != '')
		ORDER BY ended_at LIMIT ?) RETURNING id`)
	qGroupCounts = hot(`DELETE FROM scope_counts WHERE kind = 'g' AND name = ?`)
	// A tenant's rows at zero and finish tags at or behind their queue's
	// virtual time say nothing a missing row does not.
	qIdleCounts = hot(`DELETE FROM scope_counts WHERE kind = 't' AND n = 0`)
	qIdleTags   = hot(`DELETE FROM fair_finish
		WHERE finish <= coalesce((SELECT vtime FROM queue_sched WHERE queue = fair_finish.queue), 0)`)
)

// cleanScheduling deletes, inside Cleanup's step, groups that ended longer
// than keep ago (negative: never) and have no jobs left, with their
// counts, and rows that hold nothing.
func cleanScheduling(tx *wtx, now int64, keep time.Duration, limit int) error {
	if keep >= 0 {
		rows, err := tx.query(qOldGroups, now-int64(keep), limit)
		if err != nil {
			return err
		}
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		for _, id := range ids {
			if _, err := tx.exec(qGroupCounts, id); err != nil {
				return err
			}
		}
	}
	for _, q := range []string{qIdleCounts, qIdleTags} {
		if _, err := tx.exec(q); err != nil {
			return err
		}
	}
	return nil
}

// read runs fn in a read-only transaction: one snapshot of the file.
func (b *Backend) read(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := b.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return fn(tx)
}

func queryOn(ctx context.Context, tx *sql.Tx) func(string, ...any) (*sql.Rows, error) {
	return func(q string, args ...any) (*sql.Rows, error) { return tx.QueryContext(ctx, q, args...) }
}

func durationOf(ns int64) time.Duration { return time.Duration(ns) }
