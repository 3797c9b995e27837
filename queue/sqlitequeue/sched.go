package sqlitequeue

import (
	"context"
	"database/sql"
	"errors"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// sched is the scheduler of one write operation: sqlstore's, over this
// store's statements (schedStmts). SQLite has one writer, so it takes no
// locks; job counts per tenant and group come from the scope_counts
// table, which triggers keep in step with every state change; the finish
// tags the operation moves are written back by flush.
type sched struct {
	*sqlstore.Sched
	b   *Backend
	tx  *wtx
	now int64

	queues map[string]*queueRow
	cnt    scopeCounts // the last counts read, while nothing was run since
}

// queueRow is a queue's scheduling state.
type queueRow struct {
	vtime       int64
	aging       int
	pausedUntil int64
}

// scopeCounts is a scope's counts as read while tx had run gen
// statements.
type scopeCounts struct {
	kind, name string
	gen        uint64
	c          counts
}

// newSched returns a sched for one operation.
func (b *Backend) newSched(tx *wtx, now int64) *sched {
	s := &sched{b: b, tx: tx, now: now}
	s.Sched = &sqlstore.Sched{Tx: schedTx{tx}, St: schedStmts, D: s, Now: now}
	return s
}

// writeSched is write with a sched for fn; the moved finish tags are
// written in the same operation.
func (b *Backend) writeSched(ctx context.Context, op string, fn func(s *sched) error) error {
	return b.write(ctx, op, func(tx *wtx) error {
		s := b.newSched(tx, b.now())
		if err := fn(s); err != nil {
			return err
		}
		return s.flush()
	})
}

// settle does the scheduling work a transition of job id leaves behind,
// inside the transition's write: see sched.settle.
func (b *Backend) settle(tx *wtx, id int64, now int64) error {
	s := b.newSched(tx, now)
	if err := s.settle(id); err != nil {
		return err
	}
	return s.flush()
}

// settleFinal is settle for a job that the caller moved to state (not
// pending) and whose tenant and group it knows: a job with neither leaves
// nothing to do, and no read is needed.
func (b *Backend) settleFinal(tx *wtx, id int64, tenant, grp string, state queue.State, now int64) error {
	if tenant == "" && grp == "" {
		return nil
	}
	s := b.newSched(tx, now)
	if err := s.Settle(id, "", tenant, grp, state); err != nil {
		return err
	}
	return s.flush()
}

// mustID is sqlstore.ParseID for an id the backend itself produced.
func mustID(id string) int64 {
	n, _ := sqlstore.ParseID(id)
	return n
}

var qJobScopes = hot(`SELECT queue, tenant, grp, state FROM jobs WHERE id = ?`)

// settle does what a transition of job id leaves behind (sqlstore's
// Settle), reading the job's scopes and state.
func (s *sched) settle(id int64) error {
	var q, tenant, grp, state string
	err := s.tx.queryRow(qJobScopes, id).Scan(&q, &tenant, &grp, &state)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.Settle(id, q, tenant, grp, queue.State(state))
}

var qUpsertFinish = hot(`INSERT INTO fair_finish (queue, tenant, finish) VALUES (?1, ?2, ?3)
	ON CONFLICT DO UPDATE SET finish = max(finish, ?3)`)

// flush writes the moved finish tags and wakes the workers of queues
// that got pending jobs. Waking before the commit is harmless: a woken
// worker's Lease runs on the same writer, after this transaction.
func (s *sched) flush() error {
	err := s.Finishes(func(q, tenant string, finish int64) error {
		_, err := s.tx.exec(qUpsertFinish, q, tenant, finish)
		return err
	})
	if err != nil {
		return err
	}
	for _, q := range s.Ready() {
		s.b.notify(q)
	}
	return nil
}

// The scheduler's statements (sqlstore.SchedStmts documents each).
var schedStmts = &sqlstore.SchedStmts{
	Group:       qGroup,
	GroupCounts: qGroupStates,
	TenantRows: hot(`SELECT tenant, lim, weight, backlog, max_wait, paused_until FROM tenants
		WHERE tenant IN ('', ?)`),
	WakeTenant: hot(`UPDATE tenants SET wake_at = CASE WHEN wake_at = 0 OR wake_at > ?1 THEN ?1 ELSE wake_at END
		WHERE tenant = ?2`),
	WakeGroup: hot(`UPDATE job_groups SET wake_at = CASE WHEN wake_at = 0 OR wake_at > ?1 THEN ?1 ELSE wake_at END
		WHERE id = ?2`),
	HoldJob: qHoldJob,
	TenantWaiting: hot(`SELECT id, queue, grp FROM jobs WHERE tenant = ? AND tenant != '' AND state = 'waiting'
		ORDER BY band, vrank, id LIMIT ?`),
	GroupWaiting: hot(`SELECT id, queue, tenant FROM jobs WHERE grp = ? AND grp != '' AND state = 'waiting'
		ORDER BY band, vrank, id LIMIT ?`),
	Release: hot(`UPDATE jobs SET state = 'pending', hold = '', wait_until = 0, updated_at = ?
		WHERE id = ? AND state = 'waiting'`),
	TenantsToWake: hot(`SELECT tenant FROM tenants WHERE wake_at > 0 AND wake_at <= ? ORDER BY wake_at, tenant LIMIT ?`),
	GroupsToWake:  hot(`SELECT id FROM job_groups WHERE wake_at > 0 AND wake_at <= ? ORDER BY wake_at, id LIMIT ?`),
	TenantWoken:   hot(`UPDATE tenants SET wake_at = 0 WHERE tenant = ?1 AND wake_at > 0 AND wake_at <= ?2`),
	GroupWoken:    hot(`UPDATE job_groups SET wake_at = 0 WHERE id = ?1 AND wake_at > 0 AND wake_at <= ?2`),
	WaitedTooLong: hot(`SELECT ` + jobCols + ` FROM jobs
		WHERE state = 'waiting' AND wait_until > 0 AND wait_until <= ? ORDER BY wait_until, id LIMIT ?`),
	FailWaiting: hot(`UPDATE jobs SET state = 'failed', hold = '', last_error = ?1, errors = ?2,
		finished_at = ?3, updated_at = ?3 WHERE id = ?4 AND state = 'waiting' AND wait_until > 0 AND wait_until <= ?3`),
	GroupsExpired: hot(`SELECT id FROM job_groups WHERE deadline > 0 AND deadline <= ? ORDER BY deadline, id LIMIT ?`),
	GroupStarted:  hot(`UPDATE job_groups SET last_start = ? WHERE id = ?`),
	Ready: hot(`SELECT id, tenant, grp, band, vrank, vstart FROM jobs
		WHERE queue = ? AND state = 'pending' ORDER BY band, vrank, id LIMIT ?`),
	Due: hot(`SELECT id, state, tenant, grp, priority, vstart IS NOT NULL FROM jobs
		WHERE queue = ?1 AND state IN ('scheduled', 'retrying') AND run_at <= ?2 ORDER BY run_at, id LIMIT ?3`),
	// SQLite keeps no finish tag per job (?6): fair_finish holds them.
	Place: hot(`UPDATE jobs SET state = ?1, hold = ?2, wait_until = ?3, updated_at = ?4,
		vstart = coalesce(?5, vstart), band = coalesce(?7, band), vrank = coalesce(?8, vrank)
		WHERE id = ?9 AND state = ?10 AND (vstart IS NOT NULL) = ?11 AND (state = 'pending' OR run_at <= ?4)`),
	// One index lookup each (0: none), so that an idle step costs nothing.
	MaintainDue: hot(`SELECT
		coalesce((SELECT min(run_at) FROM jobs WHERE queue = ? AND state IN ('scheduled', 'retrying')), 0),
		coalesce((SELECT min(wake_at) FROM tenants WHERE wake_at > 0), 0),
		coalesce((SELECT min(wake_at) FROM job_groups WHERE wake_at > 0), 0),
		coalesce((SELECT min(wait_until) FROM jobs WHERE state = 'waiting' AND wait_until > 0), 0),
		coalesce((SELECT min(deadline) FROM job_groups WHERE deadline > 0), 0)`),
	QueueDue: hot(`SELECT coalesce(min(run_at), 0) FROM jobs
		WHERE queue = ? AND state IN ('scheduled', 'retrying')`),

	TenantCounts: hot(`SELECT state, n FROM scope_counts WHERE kind = 't' AND name = ?`),
	SetTenant: hot(`INSERT INTO tenants (tenant, lim, weight, backlog, max_wait) VALUES (?1, ?2, ?3, ?4, ?5)
		ON CONFLICT DO UPDATE SET lim = ?2, weight = ?3, backlog = ?4, max_wait = ?5`),
	TenantsWaiting: hot(`SELECT name FROM scope_counts WHERE kind = 't' AND state = 'waiting' AND n > 0`),
	SetAging: hot(`INSERT INTO queue_sched (queue, aging) VALUES (?1, ?2)
		ON CONFLICT DO UPDATE SET aging = ?2`),
	PauseTenant: hot(`INSERT INTO tenants (tenant, paused_until) VALUES (?1, ?2)
		ON CONFLICT DO UPDATE SET paused_until = CASE WHEN ?2 = 0 THEN 0 ELSE max(paused_until, ?2) END
		RETURNING paused_until`),
	PauseGroup: hot(`UPDATE job_groups SET paused_until = CASE WHEN ?1 = 0 THEN 0 ELSE max(paused_until, ?1) END
		WHERE id = ?2 RETURNING paused_until`),
	PauseQueue: hot(`INSERT INTO queue_sched (queue, paused_until) VALUES (?1, ?2)
		ON CONFLICT DO UPDATE SET paused_until = CASE WHEN ?2 = 0 THEN 0 ELSE max(paused_until, ?2) END
		RETURNING paused_until`),
	HoldTenantPending: hot(`UPDATE jobs SET state = 'waiting', hold = 'tenant', wait_until = ?1, updated_at = ?2
		WHERE tenant = ?3 AND tenant != '' AND state = 'pending' RETURNING grp`),
	GroupPending: hot(`SELECT id, queue, tenant FROM jobs WHERE grp = ? AND grp != '' AND state = 'pending'
		ORDER BY band, vrank, id LIMIT ?`),

	GroupUnfinished: hot(`SELECT
		coalesce(sum(CASE WHEN state IN ('scheduled', 'pending', 'waiting', 'active', 'retrying', 'blocked') THEN n END), 0),
		coalesce(sum(n), 0)
		FROM scope_counts WHERE kind = 'g' AND name = ?`),
	// A group without a completion job ends when it is done; one with a
	// completion job ends when that job finishes (a trigger, see
	// migrations/0005_group_retention.sql).
	GroupDone: hot(`UPDATE job_groups SET done_at = ?1, deadline = 0, wake_at = 0,
		ended_at = CASE WHEN completion_kind = '' THEN ?1 ELSE 0 END
		WHERE id = ?2 AND done_at = 0`),
	GroupCompletion: hot(`UPDATE job_groups SET completion_job = ? WHERE id = ?`),
	GroupCancel:     hot(`UPDATE job_groups SET cancel_requested = 1, deadline = 0, wake_at = 0 WHERE id = ?`),
	CancelGroupIdle: hot(`UPDATE jobs SET state = 'cancelled', hold = '', finished_at = ?1, updated_at = ?1
		WHERE grp = ?2 AND grp != '' AND state IN ('scheduled', 'pending', 'waiting', 'retrying', 'blocked')
		RETURNING id, tenant`),
	CancelGroupActive: hot(`UPDATE jobs SET cancel_requested = 1, updated_at = ?1
		WHERE grp = ?2 AND grp != '' AND state = 'active'`),
	CreateGroup: hot(`INSERT INTO job_groups (id, tenant, max_conc, min_interval, ttl, deadline,
		completion_kind, completion_queue, completion_payload, webhook, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
	JoinGroup: hot(`INSERT INTO job_groups (id, tenant, max_conc, min_interval, ttl, deadline,
		completion_kind, completion_queue, completion_payload, created_at)
		VALUES (?1, '', 0, 0, 0, 0, '', '', NULL, ?2) ON CONFLICT DO NOTHING`),
}

var qHoldJob = hot(`UPDATE jobs SET state = 'waiting', hold = ?, wait_until = ?, updated_at = ?
	WHERE id = ? AND state = 'pending'`)

// Due jobs without tenant or group that already have their fair tag
// (retries, snoozes) need no decision: one statement.
var qPromotePlain = hot(`UPDATE jobs SET state = 'pending', updated_at = ?1
	WHERE id IN (SELECT id FROM jobs WHERE queue = ?3 AND state IN ('scheduled', 'retrying') AND run_at <= ?1
		ORDER BY run_at, id LIMIT ?2) AND tenant = '' AND grp = '' AND vstart IS NOT NULL`)

// LockScope implements sqlstore.SchedDialect: the one writer needs no
// locks.
func (s *sched) LockScope(kind, name string) error { return nil }

// LockScopes implements sqlstore.SchedDialect.
func (s *sched) LockScopes(tenant, grp string) error { return nil }

// TryScopes implements sqlstore.SchedDialect.
func (s *sched) TryScopes(tenant, grp string) (bool, error) { return true, nil }

// ScopeCount implements sqlstore.SchedDialect from scope_counts. A scope's
// row set is read once for the consecutive counts of one decision: it is
// read again after any other statement.
func (s *sched) ScopeCount(kind, name string, states ...queue.State) (int64, error) {
	c := s.cnt
	if c.kind != kind || c.name != name || c.gen != s.tx.gen || c.c == nil {
		n, err := readCounts(s.tx.query, kind, name)
		if err != nil {
			return 0, err
		}
		c = scopeCounts{kind: kind, name: name, gen: s.tx.gen, c: n}
		s.cnt = c
	}
	sum := int64(0)
	for _, st := range states {
		sum += c.c[st]
	}
	return sum, nil
}

var qQueueRow = hot(`SELECT vtime, aging, paused_until FROM queue_sched WHERE queue = ?`)

// queue returns a queue's scheduling state, read once per operation.
func (s *sched) queue(name string) (*queueRow, error) {
	if q, ok := s.queues[name]; ok {
		return q, nil
	}
	if s.queues == nil {
		s.queues = map[string]*queueRow{}
	}
	q := &queueRow{}
	err := s.tx.queryRow(qQueueRow, name).Scan(&q.vtime, &q.aging, &q.pausedUntil)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	s.queues[name] = q
	return q, nil
}

// QueuePausedUntil implements sqlstore.SchedDialect.
func (s *sched) QueuePausedUntil(q string) (int64, error) {
	qr, err := s.queue(q)
	if err != nil {
		return 0, err
	}
	return qr.pausedUntil, nil
}

var qFinish = hot(`SELECT finish FROM fair_finish WHERE queue = ? AND tenant = ?`)

// FairBase implements sqlstore.SchedDialect: the queue's virtual time or
// the tenant's finish tag in fair_finish (flush writes it back).
func (s *sched) FairBase(q, tenant string) (int64, int, error) {
	qr, err := s.queue(q)
	if err != nil {
		return 0, 0, err
	}
	var f int64
	if err := s.tx.queryRow(qFinish, q, tenant).Scan(&f); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, 0, err
	}
	return max(qr.vtime, f), qr.aging, nil
}

// PromotePlain implements sqlstore.SchedDialect.
func (s *sched) PromotePlain(q string) error {
	_, err := s.tx.exec(qPromotePlain, s.now, sqlstore.PlainBatch, q)
	return err
}

// ScanJob implements sqlstore.SchedDialect.
func (s *sched) ScanJob(row sqlstore.Row) (*queue.Job, error) { return sqlstore.ScanJob(row) }

// JobFailed implements sqlstore.SchedDialect: the job's event.
func (s *sched) JobFailed(id int64) error {
	return s.b.emitState(s.tx, id, queue.StateFailed, s.now)
}

// InsertCompletion implements sqlstore.SchedDialect.
func (s *sched) InsertCompletion(spec queue.JobSpec) (int64, error) {
	j, err := s.insert(spec, false)
	if err != nil {
		return 0, err
	}
	return mustID(j.ID), nil
}

// EmitEvent implements sqlstore.SchedDialect.
func (s *sched) EmitEvent(e queue.Event) error { return s.b.emitEvent(s.tx, e, s.now) }

// LockGroupJobs implements sqlstore.SchedDialect: nothing to lock.
func (s *sched) LockGroupJobs(id string) error { return nil }

// JobCancelled implements sqlstore.SchedDialect: the job's event.
func (s *sched) JobCancelled(id int64) error {
	return s.b.emitState(s.tx, id, queue.StateCancelled, s.now)
}

// Settled implements sqlstore.SchedDialect: nothing is left.
func (s *sched) Settled() error { return nil }

var qJobState = hot(`SELECT state FROM jobs WHERE id = ?`)

// promote makes a job that is due, in whatever state it is, ready
// (sqlstore's Place).
func (s *sched) promote(id int64, q, tenant, grp string, priority int, start sql.NullInt64) error {
	p := sqlstore.Placing{ID: id, Queue: q, Tenant: tenant, Grp: grp, Priority: priority, HasTag: start.Valid}
	if err := s.tx.queryRow(qJobState, id).Scan(&p.From); err != nil {
		return err
	}
	_, err := s.Place(p)
	return err
}

var qDefaults = hot(`SELECT lim, weight, backlog, max_wait FROM tenants WHERE tenant = ''`)

func readDefaults(row rowScanner) (queue.TenantConfig, error) {
	var d queue.TenantConfig
	var maxWait int64
	err := row.Scan(&d.Limit, &d.Weight, &d.Backlog, &maxWait)
	if errors.Is(err, sql.ErrNoRows) {
		return d, nil
	}
	d.MaxWait = durationOf(maxWait)
	return d, err
}

var qCounts = hot(`SELECT state, n FROM scope_counts WHERE kind = ? AND name = ?`)

// counts is a tenant's or group's jobs per state.
type counts map[queue.State]int64

// Scope kinds in scope_counts.
const (
	kindTenant = sqlstore.ScopeTenant
	kindGroup  = sqlstore.ScopeGroup
)

func readCounts(q func(string, ...any) (*sql.Rows, error), kind, name string) (counts, error) {
	rows, err := q(qCounts, kind, name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	c := counts{}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		c[queue.State(st)] = n
	}
	return c, rows.Err()
}

// schedTx is a write transaction as sqlstore runs statements on it.
type schedTx struct{ w *wtx }

// Exec runs a statement and returns the rows it changed (sqlstore.Tx).
func (t schedTx) Exec(query string, args ...any) (int64, error) {
	res, err := t.w.exec(query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// QueryRow runs a statement of at most one row (sqlstore.Tx).
func (t schedTx) QueryRow(query string, args ...any) sqlstore.Row {
	return t.w.queryRow(query, args...)
}

// Query runs a statement of many rows (sqlstore.Tx).
func (t schedTx) Query(query string, args ...any) (sqlstore.Rows, error) {
	rows, err := t.w.query(query, args...)
	if err != nil {
		return nil, err
	}
	return schedRows{rows}, nil
}

// readTx is a read transaction as sqlstore runs statements on it.
type readTx struct {
	ctx context.Context
	tx  *sql.Tx
}

// Exec runs a statement and returns the rows it changed (sqlstore.Tx).
func (t readTx) Exec(query string, args ...any) (int64, error) {
	res, err := t.tx.ExecContext(t.ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// QueryRow runs a statement of at most one row (sqlstore.Tx).
func (t readTx) QueryRow(query string, args ...any) sqlstore.Row {
	return t.tx.QueryRowContext(t.ctx, query, args...)
}

// Query runs a statement of many rows (sqlstore.Tx).
func (t readTx) Query(query string, args ...any) (sqlstore.Rows, error) {
	rows, err := t.tx.QueryContext(t.ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return schedRows{rows}, nil
}

// schedRows is *sql.Rows with the Close sqlstore.Rows has.
type schedRows struct{ *sql.Rows }

func (r schedRows) Close() { _ = r.Rows.Close() }
