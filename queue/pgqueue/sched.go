package pgqueue

import (
	"context"
	"fmt"
	"slices"

	rules "github.com/sluicehq/sluice/internal/sched"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// sched does the tenant scheduling of one transaction (see
// backend.TenantBackend for the rules, internal/sched for the decisions).
// Every decision about a tenant is taken under the transaction's advisory
// lock on that tenant (lock), so a limit of N admits exactly N across
// processes: the counts are read after the lock, and READ COMMITTED gives
// each statement a snapshot that holds what the lock's previous holder
// committed. Jobs without tenant or group never come here.
type sched struct {
	s   *Store
	ctx context.Context
	db  dbq
	now int64

	tenants map[string]*tenantRow
	locks   stepLocks
	unique  map[uniqueName]int64 // unique keys' lock keys, once read
	ready   map[string]bool      // queues that got pending jobs
	backlog map[string]int64     // tenants' pending and waiting jobs, once counted
	finish  map[fairKey]fairNext
}

// tenantRow is a tenant's settings, effective settings and pause.
type tenantRow struct {
	own, eff    queue.TenantConfig
	pausedUntil int64
}

// newSched returns the scheduler of a step on db: a transaction of the
// store (schedTx, which may run it again) or, with caller set, the
// caller's own, which cannot be run again (see stepLocks).
func (s *Store) newSched(ctx context.Context, db dbq, caller bool) *sched {
	sc := &sched{s: s, ctx: ctx, now: s.now()}
	sc.locks = stepLocks{db: db, fresh: true, caller: caller}
	sc.db = stepDB{dbq: db, locks: &sc.locks}
	return sc
}

// Holds: why a waiting job waits.
const (
	holdTenant = "tenant"
	holdGroup  = "group"
)

// Scope kinds of the advisory locks.
const (
	kindTenant = "t"
	kindGroup  = "g"
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

// readyQueue records that queue q got a pending job.
func (sc *sched) readyQueue(q string) {
	if sc.ready == nil {
		sc.ready = map[string]bool{}
	}
	sc.ready[q] = true
}

// notify queues, in the transaction, the wake-up of every queue that got
// a pending job; it is delivered at commit.
func (sc *sched) notify() error {
	for q := range sc.ready {
		if err := sc.db.exec(sc.ctx, sc.s.q.notify, sc.s.q.channel, q); err != nil {
			return err
		}
	}
	return nil
}

// notifyReady wakes this process's workers after the commit.
func (sc *sched) notifyReady() {
	qs := make([]string, 0, len(sc.ready))
	for q := range sc.ready {
		qs = append(qs, q)
	}
	sc.s.wakeLocal(qs)
}

const (
	qTenantRows = `SELECT tenant, lim, weight, backlog, max_wait, paused_until FROM __schema__.tenants
		WHERE tenant IN ('', $1)`
)

// tenant returns a tenant's settings (for "" none: no limits, weight 1).
func (sc *sched) tenant(name string) (*tenantRow, error) {
	if t, ok := sc.tenants[name]; ok {
		return t, nil
	}
	if sc.tenants == nil {
		sc.tenants = map[string]*tenantRow{}
	}
	t := &tenantRow{eff: queue.TenantConfig{Limit: queue.Unlimited, Weight: 1, Backlog: queue.Unlimited}}
	if name != "" {
		rows, err := sc.rows(qTenantRows, name)
		if err != nil {
			return nil, err
		}
		var def queue.TenantConfig
		for rows.Next() {
			var c queue.TenantConfig
			var who string
			var maxWait, paused int64
			if err := rows.Scan(&who, &c.Limit, &c.Weight, &c.Backlog, &maxWait, &paused); err != nil {
				rows.Close()
				return nil, err
			}
			c.MaxWait = durationOf(maxWait)
			if who == "" {
				def = c
			} else {
				t.own, t.pausedUntil = c, paused
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		t.eff = t.own.Effective(def)
	}
	sc.tenants[name] = t
	return t, nil
}

// forget drops cached settings after the step changed them.
func (sc *sched) forget() { clear(sc.tenants) }

// tag returns the fair tag and sort key of a job of tenant becoming ready
// for the first time in queue q: its start and finish tags, band and rank.
// The tenant's earlier jobs in q are visible to the transaction, so a
// step tagging several takes consecutive tags.
func (sc *sched) tag(q, tenant string, priority int) (start, finish, band, rank int64, err error) {
	t, err := sc.tenant(tenant)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	// Read once per step and queue: the step's own tags follow from the
	// last (the queue's virtual time does not move inside a step before its
	// jobs are placed).
	k := fairKey{q, tenant}
	f, ok := sc.finish[k]
	if !ok {
		if err := sc.row(`SELECT __schema__.fair_start($1, $2), __schema__.fair_aging($1)`, q, tenant).Scan(&f.base, &f.aging); err != nil {
			return 0, 0, 0, 0, err
		}
	}
	start, finish = backend.FairTag(f.base, f.base, t.eff.Weight)
	band, rank = backend.FairOrder(start, priority, f.aging)
	if sc.finish == nil {
		sc.finish = map[fairKey]fairNext{}
	}
	sc.finish[k] = fairNext{base: finish, aging: f.aging}
	return start, finish, band, rank, nil
}

// tenantCounts are a tenant's unfinished jobs by state; only the states
// asked for are counted.
func (sc *sched) tenantCount(name string, states ...string) (int64, error) {
	var n int64
	err := sc.row(`SELECT count(*) FROM __schema__.jobs WHERE tenant = $1 AND tenant <> '' AND state = ANY($2)`,
		name, states).Scan(&n)
	return n, err
}

// admitted counts a tenant's pending and active jobs.
func (sc *sched) admitted(name string) (int64, error) {
	return sc.tenantCount(name, "pending", "active")
}

// holdFor returns where a ready job of tenant and group goes: "" for
// pending, or the scope it waits for. self says the job already counts as
// pending (it is being placed again).
func (sc *sched) holdFor(tenant, grp string, self bool) (string, error) {
	if tenant != "" {
		ok, err := sc.tenantRoom(tenant, self)
		if err != nil || !ok {
			return holdTenant, err
		}
	}
	if grp != "" {
		ok, err := sc.groupRoom(grp, self)
		if err != nil || !ok {
			return holdGroup, err
		}
	}
	return "", nil
}

// tenantRoom reports whether the tenant may admit one more pending job.
func (sc *sched) tenantRoom(name string, self bool) (bool, error) {
	if err := sc.lock(kindTenant, name); err != nil {
		return false, err
	}
	t, err := sc.tenant(name)
	if err != nil {
		return false, err
	}
	adm := int64(0)
	if t.eff.Limit != queue.Unlimited && t.pausedUntil <= sc.now {
		if adm, err = sc.admitted(name); err != nil {
			return false, err
		}
		if self {
			adm--
		}
	}
	ok, wake := rules.TenantRoom(t.eff.Limit, fromNanos(t.pausedUntil), fromNanos(sc.now), adm)
	if !wake.IsZero() {
		return false, sc.wakeTenant(name, toNanos(wake))
	}
	return ok, nil
}

// wakeTenant makes the first Lease at or after at look at the tenant's
// waiting jobs again.
func (sc *sched) wakeTenant(name string, at int64) error {
	return sc.exec(`INSERT INTO __schema__.tenants AS t (tenant, wake_at) VALUES ($2, $1)
		ON CONFLICT (tenant) DO UPDATE SET wake_at = CASE WHEN t.wake_at = 0 OR t.wake_at > $1 THEN $1 ELSE t.wake_at END`,
		at, name)
}

// waitUntil is the MaxWait deadline of a job of tenant that starts
// waiting now; 0 for none.
func (sc *sched) waitUntil(tenant string) (int64, error) {
	if tenant == "" {
		return 0, nil
	}
	t, err := sc.tenant(tenant)
	if err != nil {
		return 0, err
	}
	return toNanos(rules.WaitDeadline(fromNanos(sc.now), t.eff.MaxWait)), nil
}

const qHoldJob = `UPDATE __schema__.jobs SET state = 'waiting', hold = $1, wait_until = $2, updated_at = $3
	WHERE id = $4 AND state = 'pending' RETURNING 1`

// hold moves pending job id to waiting for scope hold; false when it is
// not pending (its caller has it locked, so it always is).
func (sc *sched) hold(id int64, tenant, hold string) (bool, error) {
	until, err := sc.waitUntil(tenant)
	if err != nil {
		return false, err
	}
	var one int
	err = sc.row(qHoldJob, hold, until, sc.now, id).Scan(&one)
	if isNoRows(err) {
		return false, nil
	}
	return err == nil, err
}

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
// leaves behind: a job pending again is placed again and may have to wait;
// its tenant's and group's room is filled; a group left with jobs and none
// unfinished is completed, and so is one whose last jobs a cascade through
// a flow cancelled (settleCascade).
func (sc *sched) settle(id int64, q, tenant, grp string, state queue.State) error {
	if err := sc.settleScopes(id, q, tenant, grp, state); err != nil {
		return err
	}
	return sc.settleCascade(state)
}

// settleScopes is settle for the job's own tenant and group.
func (sc *sched) settleScopes(id int64, q, tenant, grp string, state queue.State) error {
	if tenant == "" && grp == "" {
		return nil
	}
	if state == queue.StatePending {
		hold, err := sc.holdFor(tenant, grp, true)
		if err != nil {
			return err
		}
		if hold != "" {
			if _, err := sc.hold(id, tenant, hold); err != nil {
				return err
			}
		} else {
			sc.readyQueue(q)
		}
	}
	if err := sc.fillTenant(tenant); err != nil {
		return err
	}
	return sc.settleGroup(grp, state)
}

// settleJobs settles, once, the jobs a multi-job step moved to a final
// state: it fills their tenants, then their groups, then completes the
// groups that may be done, each in the order of the jobs.
func (sc *sched) settleJobs(list []*queue.Job) error {
	var ts, gs []string
	for _, j := range list {
		ts = addOnce(ts, j.Tenant)
		gs = addOnce(gs, j.Group)
	}
	for _, t := range ts {
		if err := sc.fillTenant(t); err != nil {
			return err
		}
	}
	if err := sc.settleGroups(gs); err != nil {
		return err
	}
	if len(list) == 0 {
		return nil
	}
	return sc.settleCascade(queue.StateFailed) // any of them may have ended a parent
}

// addOnce appends name to list unless it is empty or there already.
func addOnce(list []string, name string) []string {
	if name == "" || slices.Contains(list, name) {
		return list
	}
	return append(list, name)
}

// errorf wraps a sentinel with detail, keeping errors.Is working.
func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)
}

// fairKey is a queue and tenant of the fair order.
type fairKey struct{ queue, tenant string }

// fairNext is where a (queue, tenant)'s next tag starts, and the queue's
// aging step.
type fairNext struct {
	base  int64
	aging int
}
