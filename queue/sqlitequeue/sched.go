package sqlitequeue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	rules "github.com/sluicehq/sluice/internal/sched"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// sched does the tenant and group scheduling of one write operation (see
// backend.TenantBackend and backend.GroupBackend for the rules). It reads
// settings and counts inside the operation's transaction, caches what the
// operation does not change, and collects the finish tags it moves, which
// flush writes back. Job counts per tenant and group come from the
// scope_counts table, which triggers keep in step with every state change.
type sched struct {
	b   *Backend
	tx  *wtx
	now int64

	defaults *queue.TenantConfig
	tenants  map[string]*tenantRow
	queues   map[string]*queueRow
	finish   map[fairKey]int64 // finish tags moved by this operation
	ready    map[string]bool   // queues that got pending jobs
}

type fairKey struct{ queue, tenant string }

// tenantRow is a tenant's effective settings and pause.
type tenantRow struct {
	own, eff    queue.TenantConfig
	pausedUntil int64
}

// queueRow is a queue's scheduling state.
type queueRow struct {
	vtime       int64
	aging       int
	pausedUntil int64
}

// newSched returns a sched for one operation; its maps are made on first
// use, since most operations on jobs without tenant or group need none.
func (b *Backend) newSched(tx *wtx, now int64) *sched {
	return &sched{b: b, tx: tx, now: now}
}

// readyQueue records that queue q got a pending job.
func (s *sched) readyQueue(q string) {
	if s.ready == nil {
		s.ready = map[string]bool{}
	}
	s.ready[q] = true
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
	if err := s.settleState(id, tenant, grp, state); err != nil {
		return err
	}
	return s.flush()
}

// settleScoped is settle for a job whose tenant and group the caller
// knows: a job with neither leaves nothing to do.
func (b *Backend) settleScoped(tx *wtx, id int64, tenant, grp string, now int64) error {
	if tenant == "" && grp == "" {
		return nil
	}
	return b.settle(tx, id, now)
}

// mustID is parseID for an id the backend itself produced.
func mustID(id string) int64 {
	n, _ := parseID(id)
	return n
}

var qUpsertFinish = hot(`INSERT INTO fair_finish (queue, tenant, finish) VALUES (?1, ?2, ?3)
	ON CONFLICT DO UPDATE SET finish = max(finish, ?3)`)

// flush writes the moved finish tags and wakes the workers of queues
// that got pending jobs. Waking before the commit is harmless: a woken
// worker's Lease runs on the same writer, after this transaction.
func (s *sched) flush() error {
	for k, f := range s.finish {
		if _, err := s.tx.exec(qUpsertFinish, k.queue, k.tenant, f); err != nil {
			return err
		}
	}
	for q := range s.ready {
		s.b.notify(q)
	}
	return nil
}

var (
	qDefaults  = hot(`SELECT lim, weight, backlog, max_wait FROM tenants WHERE tenant = ''`)
	qTenantRow = hot(`SELECT lim, weight, backlog, max_wait, paused_until FROM tenants WHERE tenant = ?`)
	qQueueRow  = hot(`SELECT vtime, aging, paused_until FROM queue_sched WHERE queue = ?`)
	qFinish    = hot(`SELECT finish FROM fair_finish WHERE queue = ? AND tenant = ?`)
	qCounts    = hot(`SELECT state, n FROM scope_counts WHERE kind = ? AND name = ?`)
)

// tenant returns a tenant's settings (for "" none: no limits, weight 1).
// The first call of an operation reads the defaults with the tenant's row.
func (s *sched) tenant(name string) (*tenantRow, error) {
	if t, ok := s.tenants[name]; ok {
		return t, nil
	}
	if s.tenants == nil {
		s.tenants = map[string]*tenantRow{}
	}
	t := &tenantRow{eff: queue.TenantConfig{Limit: queue.Unlimited, Weight: 1, Backlog: queue.Unlimited}}
	if name != "" {
		if err := s.readTenant(name, t); err != nil {
			return nil, err
		}
	}
	s.tenants[name] = t
	return t, nil
}

var qTenantRows = hot(`SELECT tenant, lim, weight, backlog, max_wait, paused_until FROM tenants
	WHERE tenant IN ('', ?)`)

// readTenant fills t from the tenant's row and the defaults (the row of
// the empty tenant name), read together unless the defaults are known
// already.
func (s *sched) readTenant(name string, t *tenantRow) error {
	query, args := qTenantRow, []any{name}
	if s.defaults == nil {
		query = qTenantRows
	}
	rows, err := s.tx.query(query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	def := s.defaults
	if def == nil {
		def = &queue.TenantConfig{}
	}
	for rows.Next() {
		var c queue.TenantConfig
		var who string
		var maxWait, paused int64
		dest := []any{&c.Limit, &c.Weight, &c.Backlog, &maxWait, &paused}
		if query == qTenantRows {
			dest = append([]any{&who}, dest...)
		} else {
			who = name
		}
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		c.MaxWait = durationOf(maxWait)
		if who == "" {
			*def = c
		} else {
			t.own, t.pausedUntil = c, paused
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.defaults = def
	t.eff = t.own.Effective(*def)
	return nil
}

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

// forget drops cached settings after the operation changed them.
func (s *sched) forget() {
	s.defaults = nil
	clear(s.tenants)
	clear(s.queues)
}

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

// tag gives a job becoming ready for the first time its start tag and sort
// key (backend.FairTag, backend.FairOrder).
func (s *sched) tag(q, tenant string, priority int) (start, band, rank int64, err error) {
	qr, err := s.queue(q)
	if err != nil {
		return 0, 0, 0, err
	}
	k := fairKey{q, tenant}
	f, ok := s.finish[k]
	if !ok {
		if err := s.tx.queryRow(qFinish, q, tenant).Scan(&f); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return 0, 0, 0, err
		}
	}
	t, err := s.tenant(tenant)
	if err != nil {
		return 0, 0, 0, err
	}
	if s.finish == nil {
		s.finish = map[fairKey]int64{}
	}
	start, s.finish[k] = backend.FairTag(qr.vtime, f, t.eff.Weight)
	band, rank = backend.FairOrder(start, priority, qr.aging)
	return start, band, rank, nil
}

// counts is a tenant's or group's jobs per state.
type counts map[queue.State]int64

func (c counts) admitted() int64 { return c[queue.StatePending] + c[queue.StateActive] }

func (c counts) unfinished() int64 {
	return c[queue.StateScheduled] + c[queue.StatePending] + c[queue.StateWaiting] +
		c[queue.StateActive] + c[queue.StateRetrying] + c[queue.StateBlocked]
}

func (c counts) total() int64 {
	return c.unfinished() + c[queue.StateCompleted] + c[queue.StateFailed] + c[queue.StateCancelled]
}

// Scope kinds in scope_counts.
const (
	kindTenant = "t"
	kindGroup  = "g"
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

func (s *sched) counts(kind, name string) (counts, error) {
	return readCounts(s.tx.query, kind, name)
}

// Holds: why a waiting job waits.
const (
	holdTenant = "tenant"
	holdGroup  = "group"
)

// holdFor returns where a job of tenant and group that is ready goes: ""
// for pending, or the scope it waits for. self says the job already counts
// as pending (it is being placed again).
func (s *sched) holdFor(tenant, grp string, self bool) (string, error) {
	if tenant != "" {
		ok, err := s.tenantRoom(tenant, self)
		if err != nil || !ok {
			return holdTenant, err
		}
	}
	if grp != "" {
		ok, err := s.groupRoom(grp, self)
		if err != nil || !ok {
			return holdGroup, err
		}
	}
	return "", nil
}

// tenantRoom reports whether the tenant may admit one more pending job.
func (s *sched) tenantRoom(name string, self bool) (bool, error) {
	t, err := s.tenant(name)
	if err != nil {
		return false, err
	}
	adm := int64(0)
	if t.eff.Limit != queue.Unlimited && t.pausedUntil <= s.now { // else the counts do not matter
		c, err := s.counts(kindTenant, name)
		if err != nil {
			return false, err
		}
		if adm = c.admitted(); self {
			adm--
		}
	}
	ok, wake := rules.TenantRoom(t.eff.Limit, fromNanos(t.pausedUntil), fromNanos(s.now), adm)
	if !wake.IsZero() {
		return false, s.wakeTenant(name, nanosOf(wake))
	}
	return ok, nil
}

// groupRoom reports whether the group may admit one more pending job.
func (s *sched) groupRoom(id string, self bool) (bool, error) {
	g, err := s.group(id)
	if errors.Is(err, queue.ErrGroupNotFound) {
		return true, nil // deleted after it was done: no limits left
	}
	if err != nil {
		return false, err
	}
	c, err := s.counts(kindGroup, id)
	if err != nil {
		return false, err
	}
	pending := c[queue.StatePending]
	if self {
		pending--
	}
	ok, wake := rules.GroupRoom(g.limits(), fromNanos(s.now), pending, c[queue.StateActive])
	if !wake.IsZero() {
		return false, s.wakeGroup(id, nanosOf(wake))
	}
	return ok, nil
}

var (
	qWakeTenant = hot(`UPDATE tenants SET wake_at = CASE WHEN wake_at = 0 OR wake_at > ?1 THEN ?1 ELSE wake_at END
		WHERE tenant = ?2`)
	qWakeGroup = hot(`UPDATE job_groups SET wake_at = CASE WHEN wake_at = 0 OR wake_at > ?1 THEN ?1 ELSE wake_at END
		WHERE id = ?2`)
)

// wakeTenant makes the first Lease at or after at look at the tenant's
// waiting jobs again.
func (s *sched) wakeTenant(name string, at int64) error {
	_, err := s.tx.exec(qWakeTenant, at, name)
	return err
}

func (s *sched) wakeGroup(id string, at int64) error {
	_, err := s.tx.exec(qWakeGroup, at, id)
	return err
}

// waitUntil is the MaxWait deadline of a job of tenant that starts
// waiting now; 0 for none.
func (s *sched) waitUntil(tenant string) (int64, error) {
	t, err := s.tenant(tenant)
	if err != nil {
		return 0, err
	}
	return nanosOf(rules.WaitDeadline(fromNanos(s.now), t.eff.MaxWait)), nil
}

var (
	qJobScopes = hot(`SELECT queue, tenant, grp, state FROM jobs WHERE id = ?`)
	qHoldJob   = hot(`UPDATE jobs SET state = 'waiting', hold = ?, wait_until = ?, updated_at = ? WHERE id = ?`)
)

// settle does what a transition of job id leaves behind: a job that is
// pending again (requeued, rescued, snoozed for no time) is placed again
// and may have to wait; its tenant's and group's room is filled; and a
// group left with jobs and none unfinished is completed.
func (s *sched) settle(id int64) error {
	var q, tenant, grp, state string
	err := s.tx.queryRow(qJobScopes, id).Scan(&q, &tenant, &grp, &state)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.settleState(id, tenant, grp, queue.State(state))
}

// settleState is settle for a job whose scopes and new state are known.
func (s *sched) settleState(id int64, tenant, grp string, state queue.State) error {
	if tenant == "" && grp == "" {
		return nil
	}
	if state == queue.StatePending {
		if err := s.replace(id, tenant, grp); err != nil {
			return err
		}
	}
	if tenant != "" {
		if err := s.fillTenant(tenant); err != nil {
			return err
		}
	}
	if grp == "" {
		return nil
	}
	if err := s.fillGroup(grp); err != nil {
		return err
	}
	if state.Final() {
		return s.groupSettle(grp)
	}
	return nil
}

// replace moves a job that became pending again to waiting when its
// tenant or group has no room for it.
func (s *sched) replace(id int64, tenant, grp string) error {
	hold, err := s.holdFor(tenant, grp, true)
	if err != nil || hold == "" {
		return err
	}
	until, err := s.waitUntil(tenant)
	if err != nil {
		return err
	}
	_, err = s.tx.exec(qHoldJob, hold, until, s.now, id)
	return err
}

// errorf wraps a sentinel with detail, keeping errors.Is working.
func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)
}
