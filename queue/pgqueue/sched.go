package pgqueue

import (
	"context"
	"slices"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// sched is the scheduler of one transaction: sqlstore's, over this
// store's statements (schedStmts). Every decision about a tenant or group
// is taken under the transaction's advisory lock on it (LockScope), so a
// limit of N admits exactly N across processes: the counts are read after
// the lock, and READ COMMITTED gives each statement a snapshot that holds
// what the lock's previous holder committed. Jobs without tenant or group
// never come here.
type sched struct {
	*sqlstore.Sched
	s   *Store
	ctx context.Context
	db  dbq
	now int64

	locks  stepLocks
	unique map[uniqueName]int64 // unique keys' lock keys, once read
}

// newSched returns the scheduler of a step on db: a transaction of the
// store (schedTx, which may run it again) or, with caller set, the
// caller's own, which cannot be run again (see stepLocks).
func (s *Store) newSched(ctx context.Context, db dbq, caller bool) *sched {
	sc := &sched{s: s, ctx: ctx, now: s.now()}
	sc.locks = stepLocks{db: db, fresh: true, caller: caller}
	sc.db = stepDB{dbq: db, locks: &sc.locks}
	sc.Sched = &sqlstore.Sched{Tx: schedDB{sc}, St: schedStmts, D: sc, Now: sc.now}
	return sc
}

// setNow makes the step run at now.
func (sc *sched) setNow(now int64) { sc.now, sc.Now = now, now }

// Scope kinds of the advisory locks.
const (
	kindTenant = sqlstore.ScopeTenant
	kindGroup  = sqlstore.ScopeGroup
)

func (sc *sched) exec(query string, args ...any) error {
	return sc.db.exec(sc.ctx, qualify(query, sc.s.schema), args...)
}

func (sc *sched) row(query string, args ...any) scanner {
	return sc.db.queryRow(sc.ctx, qualify(query, sc.s.schema), args...)
}

func (sc *sched) rows(query string, args ...any) (rowsOf, error) {
	return sc.db.query(sc.ctx, qualify(query, sc.s.schema), args...)
}

// notify queues, in the transaction, the wake-up of every queue that got
// a pending job; it is delivered at commit.
func (sc *sched) notify() error {
	for _, q := range sc.Ready() {
		if err := sc.db.exec(sc.ctx, sc.s.q.notify, sc.s.q.channel, q); err != nil {
			return err
		}
	}
	return nil
}

// notifyReady wakes this process's workers after the commit.
func (sc *sched) notifyReady() { sc.s.wakeLocal(sc.Ready()) }

// lockScopes locks a job's tenant and group, in key order.
func (sc *sched) lockScopes(tenant, grp string) error {
	return sc.lockKeys(sc.scopeKeys(nil, tenant, grp))
}

// scopeKeys appends the keys of a tenant and a group to keys (none for
// an empty name).
func (sc *sched) scopeKeys(keys []int64, tenant, grp string) []int64 {
	if tenant != "" {
		keys = append(keys, sc.s.scopeKey(kindTenant, tenant))
	}
	if grp != "" {
		keys = append(keys, sc.s.scopeKey(kindGroup, grp))
	}
	return keys
}

// jobScopes reads a job's queue, tenant and group (which never change) and
// locks the scopes; ok is false when the job does not exist.
func (sc *sched) jobScopes(id int64) (q, tenant, grp string, ok bool, err error) {
	err = sc.peek(`SELECT queue, tenant, grp FROM __schema__.jobs WHERE id = $1`, id).Scan(&q, &tenant, &grp)
	if isNoRows(err) {
		return "", "", "", false, nil
	}
	if err != nil {
		return "", "", "", false, err
	}
	return q, tenant, grp, true, sc.lockScopes(tenant, grp)
}

// settle does what a transition of a job of tenant and group to state
// leaves behind (sqlstore's Settle), then completes the groups whose last
// jobs a cascade through a flow cancelled (settleCascade).
func (sc *sched) settle(id int64, q, tenant, grp string, state queue.State) error {
	if err := sc.Settle(id, q, tenant, grp, state); err != nil {
		return err
	}
	return sc.settleCascade(state)
}

// addOnce appends name to list unless it is empty or there already.
func addOnce(list []string, name string) []string {
	if name == "" || slices.Contains(list, name) {
		return list
	}
	return append(list, name)
}

// The scheduler's statements (sqlstore.SchedStmts documents each); the
// schema is filled in as they run.
var schedStmts = &sqlstore.SchedStmts{
	Group: `SELECT ` + sqlstore.GroupCols + ` FROM __schema__.job_groups WHERE id = $1`,
	GroupCounts: `SELECT state, count(*) FROM __schema__.jobs
		WHERE grp = $1 AND grp <> '' GROUP BY state`,
	TenantRows: `SELECT tenant, lim, weight, backlog, max_wait, paused_until FROM __schema__.tenants
		WHERE tenant IN ('', $1)`,
	WakeTenant: `INSERT INTO __schema__.tenants AS t (tenant, wake_at) VALUES ($2, $1)
		ON CONFLICT (tenant) DO UPDATE SET wake_at = CASE WHEN t.wake_at = 0 OR t.wake_at > $1 THEN $1 ELSE t.wake_at END`,
	WakeGroup: `UPDATE __schema__.job_groups SET wake_at = CASE WHEN wake_at = 0 OR wake_at > $1::bigint THEN $1::bigint ELSE wake_at END
		WHERE id = $2`,
	HoldJob: `UPDATE __schema__.jobs SET state = 'waiting', hold = $1, wait_until = $2, updated_at = $3
		WHERE id = $4 AND state = 'pending'`,
	TenantWaiting: `SELECT id, queue, grp FROM __schema__.jobs WHERE tenant = $1 AND tenant <> '' AND state = 'waiting'
		ORDER BY band, vrank, id LIMIT $2 FOR UPDATE`,
	GroupWaiting: `SELECT id, queue, tenant FROM __schema__.jobs WHERE grp = $1 AND grp <> '' AND state = 'waiting'
		ORDER BY band, vrank, id LIMIT $2 FOR UPDATE`,
	Release: `UPDATE __schema__.jobs SET state = 'pending', hold = '', wait_until = 0, updated_at = $1
		WHERE id = $2 AND state = 'waiting'`,
	TenantsToWake: `SELECT tenant FROM __schema__.tenants WHERE wake_at > 0 AND wake_at <= $1
		ORDER BY wake_at, tenant LIMIT $2`,
	GroupsToWake: `SELECT id FROM __schema__.job_groups WHERE wake_at > 0 AND wake_at <= $1
		ORDER BY wake_at, id LIMIT $2`,
	TenantWoken: `UPDATE __schema__.tenants SET wake_at = 0 WHERE tenant = $1 AND wake_at > 0 AND wake_at <= $2`,
	GroupWoken:  `UPDATE __schema__.job_groups SET wake_at = 0 WHERE id = $1 AND wake_at > 0 AND wake_at <= $2`,
	WaitedTooLong: `SELECT ` + sqlstore.JobCols("") + ` FROM __schema__.jobs
		WHERE state = 'waiting' AND wait_until > 0 AND wait_until <= $1 ORDER BY wait_until, id LIMIT $2`,
	FailWaiting: `UPDATE __schema__.jobs SET state = 'failed', hold = '', last_error = $1, errors = $2,
		finished_at = $3, updated_at = $3 WHERE id = $4 AND state = 'waiting' AND wait_until > 0 AND wait_until <= $3`,
	GroupsExpired: `SELECT id FROM __schema__.job_groups WHERE deadline > 0 AND deadline <= $1
		ORDER BY deadline, id LIMIT $2`,
	GroupStarted: `UPDATE __schema__.job_groups SET last_start = $1 WHERE id = $2`,
	// Locked for this step (SKIP LOCKED: another Lease holds the others).
	Ready: `SELECT id, tenant, grp, band, vrank, vstart FROM __schema__.jobs
		WHERE queue = $1 AND state = 'pending' ORDER BY band, vrank, id LIMIT $2 FOR UPDATE SKIP LOCKED`,
	Due: `SELECT id, state, tenant, grp, priority, vstart IS NOT NULL FROM __schema__.jobs
		WHERE queue = $1 AND state IN ('scheduled', 'retrying') AND run_at <= $2
		ORDER BY run_at, id LIMIT $3`,
	Place: `UPDATE __schema__.jobs SET state = $1, hold = $2, wait_until = $3, updated_at = $4,
		vstart = coalesce($5, vstart), vfinish = coalesce($6, vfinish), band = coalesce($7, band), vrank = coalesce($8, vrank)
		WHERE id = $9 AND state = $10 AND (vstart IS NOT NULL) = $11 AND (state = 'pending' OR run_at <= $4)`,
	// One probe of a partial index each (0: none).
	MaintainDue: `SELECT
		coalesce((SELECT min(run_at) FROM __schema__.jobs WHERE queue = $1 AND state IN ('scheduled', 'retrying')), 0),
		coalesce((SELECT min(wake_at) FROM __schema__.tenants WHERE wake_at > 0), 0),
		coalesce((SELECT min(wake_at) FROM __schema__.job_groups WHERE wake_at > 0), 0),
		coalesce((SELECT min(wait_until) FROM __schema__.jobs WHERE state = 'waiting' AND wait_until > 0), 0),
		coalesce((SELECT min(deadline) FROM __schema__.job_groups WHERE deadline > 0), 0)`,
	QueueDue: `SELECT coalesce(min(run_at), 0) FROM __schema__.jobs
		WHERE queue = $1 AND state IN ('scheduled', 'retrying')`,

	TenantCounts: `SELECT state, count(*) FROM __schema__.jobs
		WHERE tenant = $1 AND tenant <> '' AND state NOT IN ` + finalStates + ` GROUP BY state`,
	SetTenant: `INSERT INTO __schema__.tenants (tenant, lim, weight, backlog, max_wait) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (tenant) DO UPDATE SET lim = $2, weight = $3, backlog = $4, max_wait = $5`,
	TenantsWaiting: `SELECT DISTINCT tenant FROM __schema__.jobs WHERE tenant <> '' AND state = 'waiting'`,
	SetAging: `INSERT INTO __schema__.queue_sched (queue, aging) VALUES ($1, $2)
		ON CONFLICT (queue) DO UPDATE SET aging = $2`,
	PauseTenant: `INSERT INTO __schema__.tenants AS t (tenant, paused_until) VALUES ($1, $2)
		ON CONFLICT (tenant) DO UPDATE SET paused_until = CASE WHEN $2 = 0 THEN 0 ELSE greatest(t.paused_until, $2) END
		RETURNING paused_until`,
	PauseGroup: `UPDATE __schema__.job_groups SET paused_until = CASE WHEN $1::bigint = 0 THEN 0 ELSE greatest(paused_until, $1::bigint) END
		WHERE id = $2 RETURNING paused_until`,
	PauseQueue: `INSERT INTO __schema__.queue_sched AS s (queue, paused_until) VALUES ($1, $2)
		ON CONFLICT (queue) DO UPDATE SET paused_until = CASE WHEN $2 = 0 THEN 0 ELSE greatest(s.paused_until, $2) END
		RETURNING paused_until`,
	HoldTenantPending: `UPDATE __schema__.jobs SET state = 'waiting', hold = 'tenant', wait_until = $1, updated_at = $2
		WHERE tenant = $3 AND tenant <> '' AND state = 'pending' RETURNING grp`,
	GroupPending: `SELECT id, queue, tenant FROM __schema__.jobs WHERE grp = $1 AND grp <> '' AND state = 'pending'
		ORDER BY band, vrank, id LIMIT $2 FOR UPDATE`,

	// Deleted jobs count too, so a group whose jobs were cleaned is not
	// completed again.
	GroupUnfinished: `SELECT
		(EXISTS (SELECT 1 FROM __schema__.jobs WHERE grp = $1 AND grp <> '' AND state NOT IN ` + finalStates + `))::int,
		(EXISTS (SELECT 1 FROM __schema__.jobs WHERE grp = $1 AND grp <> '')
		OR EXISTS (SELECT 1 FROM __schema__.job_groups WHERE id = $1 AND gone_completed + gone_failed + gone_cancelled > 0))::int`,
	GroupDone: `UPDATE __schema__.job_groups SET done_at = $1::bigint, deadline = 0, wake_at = 0,
		ended_at = CASE WHEN completion_kind = '' THEN $1::bigint ELSE 0 END
		WHERE id = $2 AND done_at = 0`,
	GroupCompletion: `UPDATE __schema__.job_groups SET completion_job = $1 WHERE id = $2`,
	GroupCancel:     `UPDATE __schema__.job_groups SET cancel_requested = true, deadline = 0, wake_at = 0 WHERE id = $1`,
	CancelGroupIdle: `UPDATE __schema__.jobs SET state = 'cancelled', hold = '', finished_at = $1, updated_at = $1
		WHERE grp = $2 AND grp <> '' AND state IN ('scheduled', 'pending', 'waiting', 'retrying', 'blocked')
		RETURNING id, tenant`,
	CancelGroupActive: `UPDATE __schema__.jobs SET cancel_requested = true, updated_at = $1
		WHERE grp = $2 AND grp <> '' AND state = 'active'`,
	CreateGroup: `INSERT INTO __schema__.job_groups (id, tenant, max_conc, min_interval, ttl, deadline,
		completion_kind, completion_queue, completion_payload, webhook, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING`,
	JoinGroup: `INSERT INTO __schema__.job_groups (id, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
}

// LockScope implements sqlstore.SchedDialect (see lock).
func (sc *sched) LockScope(kind, name string) error { return sc.lock(kind, name) }

// LockScopes implements sqlstore.SchedDialect, in key order.
func (sc *sched) LockScopes(tenant, grp string) error { return sc.lockScopes(tenant, grp) }

// TryScopes implements sqlstore.SchedDialect (see tryScopes).
func (sc *sched) TryScopes(tenant, grp string) (bool, error) { return sc.tryScopes(tenant, grp) }

// ScopeCount implements sqlstore.SchedDialect: one count of the jobs, by
// the tenant's or group's index.
func (sc *sched) ScopeCount(kind, name string, states ...queue.State) (int64, error) {
	st := make([]string, len(states))
	for i, s := range states {
		st[i] = string(s)
	}
	query := `SELECT count(*) FROM __schema__.jobs WHERE tenant = $1 AND tenant <> '' AND state = ANY($2)`
	if kind == kindGroup {
		query = `SELECT count(*) FROM __schema__.jobs WHERE grp = $1 AND grp <> '' AND state = ANY($2)`
	}
	var n int64
	err := sc.row(query, name, st).Scan(&n)
	return n, err
}

// QueuePausedUntil implements sqlstore.SchedDialect.
func (sc *sched) QueuePausedUntil(q string) (int64, error) {
	var paused int64
	err := sc.row(`SELECT paused_until FROM __schema__.queue_sched WHERE queue = $1`, q).Scan(&paused)
	if isNoRows(err) {
		return 0, nil
	}
	return paused, err
}

// FairBase implements sqlstore.SchedDialect: fair_start reads the
// tenant's finish tags from its jobs, so the step's own earlier jobs are
// seen.
func (sc *sched) FairBase(q, tenant string) (base int64, aging int, err error) {
	err = sc.row(`SELECT __schema__.fair_start($1, $2), __schema__.fair_aging($1)`, q, tenant).Scan(&base, &aging)
	return base, aging, err
}

// PromotePlain implements sqlstore.SchedDialect by the full lease's
// set-based promotion.
func (sc *sched) PromotePlain(q string) error {
	return sc.db.exec(sc.ctx, sc.s.q.promoteOne, q, sc.now)
}

// ScanJob implements sqlstore.SchedDialect.
func (sc *sched) ScanJob(row sqlstore.Row) (*queue.Job, error) { return sqlstore.ScanJob(row) }

// JobFailed implements sqlstore.SchedDialect: the job's events are written
// by a trigger.
func (sc *sched) JobFailed(id int64) error { return nil }

// Settled implements sqlstore.SchedDialect: any of the jobs settled may
// have ended a parent.
func (sc *sched) Settled() error { return sc.settleCascade(queue.StateFailed) }

// schedDB is a step's transaction as sqlstore runs statements on it.
type schedDB struct{ sc *sched }

// Exec runs a statement and returns the rows it changed (sqlstore.Tx).
func (d schedDB) Exec(query string, args ...any) (int64, error) {
	return d.sc.db.execN(d.sc.ctx, qualify(query, d.sc.s.schema), args...)
}

// QueryRow runs a statement of at most one row (sqlstore.Tx).
func (d schedDB) QueryRow(query string, args ...any) sqlstore.Row { return d.sc.row(query, args...) }

// Query runs a statement of many rows (sqlstore.Tx).
func (d schedDB) Query(query string, args ...any) (sqlstore.Rows, error) {
	return d.sc.rows(query, args...)
}
