package sqlitequeue

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	rules "github.com/sluicehq/sluice/internal/sched"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

var _ backend.GroupBackend = (*Backend)(nil)

// groupRow is a row of job_groups.
type groupRow struct {
	spec          queue.GroupSpec
	maxConc       int
	minInterval   int64
	deadline      int64
	createdAt     int64
	cancelReq     bool
	doneAt        int64
	completionJob int64
	lastStart     int64
	pausedUntil   int64
}

// limits is what the scheduler's decisions read of the group.
func (g *groupRow) limits() rules.GroupLimits {
	return rules.GroupLimits{MaxConcurrency: g.maxConc, MinInterval: time.Duration(g.minInterval),
		PausedUntil: fromNanos(g.pausedUntil), LastStart: fromNanos(g.lastStart)}
}

// blockedUntil is when the group may start a job again: the end of a
// pause, or its last start plus its interval (rules.GroupLimits).
func (g *groupRow) blockedUntil() int64 { return nanosOf(g.limits().BlockedUntil()) }

// nanosOf is fromNanos's inverse: 0 for the zero time.
func nanosOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

const groupCols = `id, tenant, max_conc, min_interval, ttl, deadline, completion_kind, completion_queue,
	completion_payload, created_at, cancel_requested, done_at, completion_job, last_start, paused_until,
	webhook`

var (
	qGroup       = hot(`SELECT ` + groupCols + ` FROM job_groups WHERE id = ?`)
	qInsertGroup = hot(`INSERT INTO job_groups (id, tenant, max_conc, min_interval, ttl, deadline,
		completion_kind, completion_queue, completion_payload, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`)
	// A group without a completion job ends when it is done; one with a
	// completion job ends when that job finishes (a trigger, see
	// migrations/0005_group_retention.sql).
	qGroupDone = hot(`UPDATE job_groups SET done_at = ?1, deadline = 0, wake_at = 0,
		ended_at = CASE WHEN completion_kind = '' THEN ?1 ELSE 0 END
		WHERE id = ?2 AND done_at = 0`)
	qGroupCompletion = hot(`UPDATE job_groups SET completion_job = ? WHERE id = ?`)
	qGroupCancel     = hot(`UPDATE job_groups SET cancel_requested = 1, deadline = 0, wake_at = 0 WHERE id = ?`)
	qCancelGroupIdle = hot(`UPDATE jobs SET state = 'cancelled', hold = '', finished_at = ?1, updated_at = ?1
		WHERE grp = ?2 AND grp != '' AND state IN ('scheduled', 'pending', 'waiting', 'retrying', 'blocked')
		RETURNING id, tenant`)
	qCancelGroupActive = hot(`UPDATE jobs SET cancel_requested = 1, updated_at = ?1
		WHERE grp = ?2 AND grp != '' AND state = 'active'`)
)

func scanGroup(row rowScanner) (*groupRow, error) {
	g := &groupRow{}
	var minInterval, ttl int64
	var cancel int
	var webhook string
	err := row.Scan(&g.spec.ID, &g.spec.Tenant, &g.maxConc, &minInterval, &ttl, &g.deadline,
		&g.spec.CompletionKind, &g.spec.CompletionQueue, &g.spec.CompletionPayload, &g.createdAt,
		&cancel, &g.doneAt, &g.completionJob, &g.lastStart, &g.pausedUntil, &webhook)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, queue.ErrGroupNotFound
	}
	if err != nil {
		return nil, err
	}
	g.minInterval = minInterval
	g.spec.MaxConcurrency = g.maxConc
	g.spec.MinInterval = time.Duration(minInterval)
	g.spec.TTL = time.Duration(ttl)
	g.cancelReq = cancel != 0
	if g.spec.Webhook, err = backend.DecodeWebhook(webhook); err != nil {
		return nil, err
	}
	return g, nil
}

// group reads a group's row in the operation; ErrGroupNotFound when none.
func (s *sched) group(id string) (*groupRow, error) {
	return scanGroup(s.tx.queryRow(qGroup, id))
}

// joinGroup is called for each job enqueued into group id: it creates a
// group never created (with no limits), and refuses a closed one.
func (s *sched) joinGroup(id string) error {
	g, err := s.group(id)
	if errors.Is(err, queue.ErrGroupNotFound) {
		_, err = s.tx.exec(qInsertGroup, id, "", 0, 0, 0, 0, "", "", nil, s.now)
		return err
	}
	if err != nil {
		return err
	}
	if g.cancelReq || g.doneAt > 0 {
		return errorf(queue.ErrGroupClosed, "group %s", id)
	}
	return nil
}

// progress reads a group's row and counts through q (a read or the write
// transaction), as they are at now: a pause that has ended is not reported.
func progress(row rowScanner, q func(string, ...any) (*sql.Rows, error), id string, now int64) (*queue.GroupProgress, *groupRow, error) {
	g, err := scanGroup(row)
	if err != nil {
		return nil, nil, err
	}
	c, err := readCounts(q, kindGroup, id)
	if err != nil {
		return nil, nil, err
	}
	p := &queue.GroupProgress{
		GroupSpec: g.spec, CancelRequested: g.cancelReq, Done: g.doneAt > 0,
		CreatedAt: fromNanos(g.createdAt), FinishedAt: fromNanos(g.doneAt),
	}
	for st, n := range c {
		backend.AddGroupCount(p, st, n)
	}
	if g.pausedUntil > now {
		p.PausedUntil = fromNanos(g.pausedUntil)
	}
	if g.completionJob > 0 {
		p.CompletionJobID = strconv.FormatInt(g.completionJob, 10)
	}
	if len(p.CompletionPayload) == 0 {
		p.CompletionPayload = nil
	}
	return p, g, nil
}

// groupSettle completes group id when it has jobs and none unfinished:
// marks it done (only if not yet), enqueues its completion job and records
// the group.completed event, all in the caller's step.
func (s *sched) groupSettle(id string) error {
	c, err := s.counts(kindGroup, id)
	if err != nil || !rules.GroupComplete(c.unfinished(), c.total()) {
		return err
	}
	res, err := s.tx.exec(qGroupDone, s.now, id)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err // done already (or the group is gone)
	}
	p, _, err := progress(s.tx.queryRow(qGroup, id), s.tx.query, id, s.now)
	if err != nil {
		return err
	}
	if spec, ok := backend.CompletionJob(*p); ok {
		j, err := s.insert(spec, false)
		if err != nil {
			return err
		}
		if _, err := s.tx.exec(qGroupCompletion, j.ID, id); err != nil {
			return err
		}
		p.CompletionJobID = j.ID
	}
	return s.emitGroupCompleted(p)
}

func (s *sched) emitGroupCompleted(p *queue.GroupProgress) error {
	data, err := json.Marshal(queue.CompletionReport{Group: p.ID, Total: p.Total(), Completed: p.Completed,
		Failed: p.Failed, Cancelled: p.Cancelled, CancelRequested: p.CancelRequested})
	if err != nil {
		return err
	}
	return s.b.emitEvent(s.tx, queue.Event{Type: queue.EventGroupCompleted, Group: p.ID, Tenant: p.Tenant,
		JobID: p.CompletionJobID, Data: data}, s.now)
}

// cancelGroup cancels group id's idle jobs and flags its active ones.
func (s *sched) cancelGroup(id string) error {
	g, err := s.group(id)
	if err != nil {
		return err
	}
	if g.cancelReq || g.doneAt > 0 {
		return nil
	}
	if _, err := s.tx.exec(qGroupCancel, id); err != nil {
		return err
	}
	rows, err := s.tx.query(qCancelGroupIdle, s.now, id)
	if err != nil {
		return err
	}
	var ids []int64
	tenants := map[string]bool{}
	for rows.Next() {
		var jid int64
		var t string
		if err := rows.Scan(&jid, &t); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, jid)
		tenants[t] = t != ""
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, jid := range ids {
		if err := s.b.emitState(s.tx, jid, queue.StateCancelled, s.now); err != nil {
			return err
		}
	}
	if _, err := s.tx.exec(qCancelGroupActive, s.now, id); err != nil {
		return err
	}
	for t, ok := range tenants {
		if ok {
			if err := s.fillTenant(t); err != nil {
				return err
			}
		}
	}
	return s.groupSettle(id)
}

// CreateGroup implements backend.GroupBackend.
func (b *Backend) CreateGroup(ctx context.Context, spec queue.GroupSpec) (*queue.GroupProgress, error) {
	var p *queue.GroupProgress
	err := b.writeSched(ctx, "create group", func(s *sched) error {
		deadline := int64(0)
		if spec.TTL > 0 {
			deadline = s.now + int64(spec.TTL)
		}
		res, err := s.tx.exec(qInsertGroup, spec.ID, spec.Tenant, spec.MaxConcurrency, int64(spec.MinInterval),
			int64(spec.TTL), deadline, spec.CompletionKind, spec.CompletionQueue, spec.CompletionPayload, s.now)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return errorf(queue.ErrGroupExists, "group %s", spec.ID)
		}
		if err := s.storeGroupExtras(spec); err != nil {
			return err
		}
		p, _, err = progress(s.tx.queryRow(qGroup, spec.ID), s.tx.query, spec.ID, s.now)
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
		p, _, err = progress(tx.QueryRowContext(ctx, qGroup, id), queryOn(ctx, tx), id, b.now())
		return err
	})
	return p, b.wrap("group", err)
}

// CancelGroup implements backend.GroupBackend.
func (b *Backend) CancelGroup(ctx context.Context, id string) (*queue.GroupProgress, error) {
	var p *queue.GroupProgress
	err := b.writeSched(ctx, "cancel group", func(s *sched) error {
		if err := s.cancelGroup(id); err != nil {
			return err
		}
		var err error
		p, _, err = progress(s.tx.queryRow(qGroup, id), s.tx.query, id, s.now)
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

// groupRetention is how long a done group is kept: as long as the
// longest-kept of its jobs, so its progress outlives them; negative
// (forever) when any final state is kept forever.
func groupRetention(r queue.Retention) time.Duration {
	keep := time.Duration(0)
	for _, d := range []time.Duration{r.Completed, r.Failed, r.Cancelled} {
		if d < 0 {
			return -1
		}
		keep = max(keep, d)
	}
	return keep
}

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
