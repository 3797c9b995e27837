package sqlitequeue

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"

	rules "github.com/sluicehq/sluice/internal/sched"
	"github.com/sluicehq/sluice/queue"
)

// promoteBatch bounds how many due jobs one Lease promotes; the rest follow
// on the next call.
const promoteBatch = 1000

// maintainBatch bounds the scopes woken and the waiting jobs expired by
// one Lease.
const maintainBatch = 100

var (
	// Due jobs without tenant or group that already have their fair tag
	// (retries, snoozes) need no decision: one statement.
	qPromotePlain = hot(`UPDATE jobs SET state = 'pending', updated_at = ?1
		WHERE id IN (SELECT id FROM jobs WHERE queue = ?3 AND state IN ('scheduled', 'retrying') AND run_at <= ?1
			ORDER BY run_at, id LIMIT ?2) AND tenant = '' AND grp = '' AND vstart IS NOT NULL`)
	qDue = hot(`SELECT id, queue, tenant, grp, priority, vstart FROM jobs
		WHERE queue = ?3 AND state IN ('scheduled', 'retrying') AND run_at <= ?1 ORDER BY run_at, id LIMIT ?2`)
	qQueueDue = hot(`SELECT coalesce(min(run_at), 0) FROM jobs
		WHERE queue = ? AND state IN ('scheduled', 'retrying')`)
	qPromoteTagged = hot(`UPDATE jobs SET state = ?, hold = ?, wait_until = ?, updated_at = ? WHERE id = ?`)
	qPromoteNew    = hot(`UPDATE jobs SET state = ?, hold = ?, wait_until = ?, updated_at = ?,
		vstart = ?, band = ?, vrank = ? WHERE id = ?`)
	qTenantsToWake = hot(`SELECT tenant FROM tenants WHERE wake_at > 0 AND wake_at <= ? ORDER BY wake_at, tenant LIMIT ?`)
	qGroupsToWake  = hot(`SELECT id FROM job_groups WHERE wake_at > 0 AND wake_at <= ? ORDER BY wake_at, id LIMIT ?`)
	qTenantWoken   = hot(`UPDATE tenants SET wake_at = 0 WHERE tenant = ?`)
	qGroupWoken    = hot(`UPDATE job_groups SET wake_at = 0 WHERE id = ?`)
	qWaitedTooLong = hot(`SELECT ` + jobCols + ` FROM jobs
		WHERE state = 'waiting' AND wait_until > 0 AND wait_until <= ? ORDER BY wait_until, id LIMIT ?`)
	qFailWaiting = hot(`UPDATE jobs SET state = 'failed', hold = '', last_error = ?, errors = ?,
		finished_at = ?3, updated_at = ?3 WHERE id = ?4 AND state = 'waiting'`)
	qGroupsExpired = hot(`SELECT id FROM job_groups WHERE deadline > 0 AND deadline <= ? ORDER BY deadline, id LIMIT ?`)
)

// qMaintainDue reads the earliest time each of maintain's steps has work,
// one index lookup each (0: none), so that an idle step costs nothing:
// the due jobs of the first queue leased from (qQueueDue, of each other
// one), then the scopes.
var qMaintainDue = hot(`SELECT
	coalesce((SELECT min(run_at) FROM jobs WHERE queue = ? AND state IN ('scheduled', 'retrying')), 0),
	coalesce((SELECT min(wake_at) FROM tenants WHERE wake_at > 0), 0),
	coalesce((SELECT min(wake_at) FROM job_groups WHERE wake_at > 0), 0),
	coalesce((SELECT min(wait_until) FROM jobs WHERE state = 'waiting' AND wait_until > 0), 0),
	coalesce((SELECT min(deadline) FROM job_groups WHERE deadline > 0), 0)`)

// maintain does a Lease's time-driven work before it picks, in the order
// every store does it (internal/sched): the due jobs of queues become
// ready (pending or waiting), queue by queue; the tenants, then the groups,
// whose pause or crawl delay has ended release their waiting jobs; jobs
// that waited past their tenant's MaxWait fail; groups past their TTL are
// cancelled.
func (s *sched) maintain(queues []string) error {
	queues = dedupe(queues)
	var due [5]int64
	if err := s.tx.queryRow(qMaintainDue, queues[0]).Scan(&due[0], &due[1], &due[2], &due[3], &due[4]); err != nil {
		return err
	}
	for i, q := range queues {
		qdue := due[0]
		if i > 0 {
			if err := s.tx.queryRow(qQueueDue, q).Scan(&qdue); err != nil {
				return err
			}
		}
		if qdue > 0 && qdue <= s.now {
			if err := s.promoteDue(q); err != nil {
				return err
			}
		}
	}
	steps := [4]func() error{s.wakeTenants, s.wakeGroups, s.expireWaits, s.expireGroups}
	for i, step := range steps {
		if at := due[i+1]; at == 0 || at > s.now {
			continue
		}
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// promoteDue makes queue q's due scheduled and retrying jobs ready, by
// due time then id. A job ready for the first time gets its fair tag here.
func (s *sched) promoteDue(q string) error {
	if _, err := s.tx.exec(qPromotePlain, s.now, promoteBatch, q); err != nil {
		return err
	}
	type due struct {
		id          int64
		queue, t, g string
		priority    int
		start       sql.NullInt64
	}
	rows, err := s.tx.query(qDue, s.now, promoteBatch, q)
	if err != nil {
		return err
	}
	var list []due
	for rows.Next() {
		var d due
		if err := rows.Scan(&d.id, &d.queue, &d.t, &d.g, &d.priority, &d.start); err != nil {
			rows.Close()
			return err
		}
		list = append(list, d)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, d := range list {
		if err := s.promote(d.id, d.queue, d.t, d.g, d.priority, d.start); err != nil {
			return err
		}
	}
	return nil
}

// promote makes one due job ready: pending, or waiting for its tenant or
// group.
func (s *sched) promote(id int64, q, tenant, grp string, priority int, start sql.NullInt64) error {
	state, hold, waitEnd := queue.StatePending, "", int64(0)
	var err error
	if tenant != "" || grp != "" {
		if hold, err = s.holdFor(tenant, grp, false); err != nil {
			return err
		}
	}
	if hold != "" {
		state = queue.StateWaiting
		if waitEnd, err = s.waitUntil(tenant); err != nil {
			return err
		}
	} else {
		s.readyQueue(q)
	}
	if start.Valid {
		_, err = s.tx.exec(qPromoteTagged, string(state), hold, waitEnd, s.now, id)
		return err
	}
	vstart, band, rank, err := s.tag(q, tenant, priority)
	if err != nil {
		return err
	}
	_, err = s.tx.exec(qPromoteNew, string(state), hold, waitEnd, s.now, vstart, band, rank, id)
	return err
}

// wakeTenants and wakeGroups fill the scopes whose wake time has come (a
// pause or crawl delay ended, or a fill stopped at its bound).
func (s *sched) wakeTenants() error { return s.wake(qTenantsToWake, qTenantWoken, s.fillTenant) }

func (s *sched) wakeGroups() error { return s.wake(qGroupsToWake, qGroupWoken, s.fillGroup) }

func (s *sched) wake(list, woken string, fill func(string) error) error {
	names, err := s.names(list, s.now, maintainBatch)
	if err != nil {
		return err
	}
	for _, n := range names {
		if _, err := s.tx.exec(woken, n); err != nil {
			return err
		}
		if err := fill(n); err != nil {
			return err
		}
	}
	return nil
}

// names runs a query that lists one text column.
func (s *sched) names(query string, args ...any) ([]string, error) {
	rows, err := s.tx.query(query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// expireWaits fails the waiting jobs whose MaxWait deadline has passed.
func (s *sched) expireWaits() error {
	rows, err := s.tx.query(qWaitedTooLong, s.now, maintainBatch)
	if err != nil {
		return err
	}
	var list []*queue.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			rows.Close()
			return err
		}
		list = append(list, j)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, j := range list {
		if err := s.failWaiting(j); err != nil {
			return err
		}
	}
	return s.settleJobs(list)
}

// settleJobs settles, once, the jobs a multi-job step moved to a final
// state, as every store does (internal/sched): it fills their tenants,
// then their groups, then completes the groups that may be done, each in
// the order of the jobs.
func (s *sched) settleJobs(list []*queue.Job) error {
	var ts, gs []string
	for _, j := range list {
		ts = addOnce(ts, j.Tenant)
		gs = addOnce(gs, j.Group)
	}
	for _, t := range ts {
		if err := s.fillTenant(t); err != nil {
			return err
		}
	}
	for _, g := range gs {
		if err := s.fillGroup(g); err != nil {
			return err
		}
	}
	for _, g := range gs {
		if err := s.groupSettle(g); err != nil {
			return err
		}
	}
	return nil
}

// addOnce appends name to list unless it is empty or there already.
func addOnce(list []string, name string) []string {
	if name == "" || slices.Contains(list, name) {
		return list
	}
	return append(list, name)
}

func (s *sched) failWaiting(j *queue.Job) error {
	id, _ := parseID(j.ID)
	t, err := s.tenant(j.Tenant)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("%v: waited longer than tenant %s's MaxWait of %s", queue.ErrBacklogFull, j.Tenant, t.eff.MaxWait)
	hist, err := appendError(j.Errors, queue.AttemptError{Attempt: j.Attempt, At: fromNanos(s.now), Error: msg})
	if err != nil {
		return err
	}
	if _, err := s.tx.exec(qFailWaiting, msg, hist, s.now, id); err != nil {
		return err
	}
	return s.b.emitState(s.tx, id, queue.StateFailed, s.now)
}

// expireGroups cancels the groups whose TTL has run out.
func (s *sched) expireGroups() error {
	ids, err := s.names(qGroupsExpired, s.now, maintainBatch)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := s.cancelGroup(id); err != nil {
			return err
		}
	}
	return nil
}

// cand is a pending job Lease may hand out.
type cand struct {
	id, band, rank, start int64
	queue, tenant, grp    string
	pos, qi               int // place in its queue's list, and the queue's index
}

var qReady = hot(`SELECT id, tenant, grp, band, vrank, vstart FROM jobs
	WHERE queue = ? AND state = 'pending' ORDER BY band, vrank, id LIMIT ?`)

// pickRounds bounds how often pick looks for more candidates after moving
// blocked ones to waiting.
const pickRounds = 4

// pick chooses up to max pending jobs from queues in the fair order,
// checking each against its tenant's and group's limits with the counts
// of this step; a candidate that is blocked moves to waiting. Across
// queues, the lower band goes first and queues take turns within a band.
func (s *sched) pick(queues []string, max int) ([]cand, *leaseScopes, error) {
	ls := &leaseScopes{s: s}
	var picked []cand
	taken := map[int64]bool{}
	for round := 0; round < pickRounds && len(picked) < max; round++ {
		// The first look asks for just enough; after blocked jobs moved
		// to waiting, later looks see past the picked ones (still
		// pending) and ask for more.
		n := max
		if round > 0 {
			n = len(picked) + 2*(max-len(picked)) + 16<<round
		}
		cands, full, err := s.candidates(queues, n)
		if err != nil {
			return nil, nil, err
		}
		held := 0
		for _, c := range cands {
			if len(picked) == max {
				break
			}
			if taken[c.id] {
				continue
			}
			hold, err := ls.check(c)
			if err != nil {
				return nil, nil, err
			}
			if hold == "" {
				picked = append(picked, c)
				taken[c.id] = true
				continue
			}
			if err := ls.hold(c, hold); err != nil {
				return nil, nil, err
			}
			held++
		}
		if held == 0 || !full {
			break
		}
	}
	return picked, ls, nil
}

// candidates lists up to n pending jobs of each queue not paused, merged,
// and reports whether any queue had more.
func (s *sched) candidates(queues []string, n int) ([]cand, bool, error) {
	var all []cand
	full := false
	for qi, q := range dedupe(queues) {
		qr, err := s.queue(q)
		if err != nil {
			return nil, false, err
		}
		if qr.pausedUntil > s.now {
			continue
		}
		rows, err := s.tx.query(qReady, q, n)
		if err != nil {
			return nil, false, err
		}
		k := 0
		for rows.Next() {
			c := cand{queue: q, pos: k, qi: qi}
			var start sql.NullInt64
			if err := rows.Scan(&c.id, &c.tenant, &c.grp, &c.band, &c.rank, &start); err != nil {
				rows.Close()
				return nil, false, err
			}
			c.start = start.Int64
			all = append(all, c)
			k++
		}
		if err := rows.Close(); err != nil {
			return nil, false, err
		}
		full = full || k == n
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.band != b.band {
			return a.band < b.band
		}
		if a.pos != b.pos {
			return a.pos < b.pos
		}
		return a.qi < b.qi
	})
	return all, full, nil
}

// leaseScopes tracks, during one pick, each scope's active jobs including
// the ones picked so far.
type leaseScopes struct {
	s       *sched
	tenants map[string]*leaseTenant
	groups  map[string]*leaseGroup
	// after holds the fills owed once the picked jobs are active: a job
	// held for one scope left room in its other scope.
	fillTenants, fillGroups map[string]bool
}

type leaseTenant struct {
	row    *tenantRow
	active int64
}

type leaseGroup struct {
	row     *groupRow // nil: the group is gone
	active  int64
	started bool // a job with a MinInterval was picked
}

func (ls *leaseScopes) tenant(name string) (*leaseTenant, error) {
	if t, ok := ls.tenants[name]; ok {
		return t, nil
	}
	if ls.tenants == nil {
		ls.tenants = map[string]*leaseTenant{}
	}
	row, err := ls.s.tenant(name)
	if err != nil {
		return nil, err
	}
	t := &leaseTenant{row: row}
	if row.eff.Limit != queue.Unlimited { // an unlimited tenant's count does not matter
		c, err := ls.s.counts(kindTenant, name)
		if err != nil {
			return nil, err
		}
		t.active = c[queue.StateActive]
	}
	ls.tenants[name] = t
	return t, nil
}

func (ls *leaseScopes) group(id string) (*leaseGroup, error) {
	if g, ok := ls.groups[id]; ok {
		return g, nil
	}
	if ls.groups == nil {
		ls.groups = map[string]*leaseGroup{}
	}
	g := &leaseGroup{}
	row, err := ls.s.group(id)
	switch {
	case errors.Is(err, queue.ErrGroupNotFound):
	case err != nil:
		return nil, err
	default:
		c, err := ls.s.counts(kindGroup, id)
		if err != nil {
			return nil, err
		}
		g.row, g.active = row, c[queue.StateActive]
	}
	ls.groups[id] = g
	return g, nil
}

// check returns "" and counts c as started when its tenant and group let
// it start now, or the scope that holds it back.
func (ls *leaseScopes) check(c cand) (string, error) {
	s := ls.s
	var t *leaseTenant
	var g *leaseGroup
	var err error
	if c.tenant != "" {
		if t, err = ls.tenant(c.tenant); err != nil {
			return "", err
		}
		ok, wake := rules.TenantRoom(t.row.eff.Limit, fromNanos(t.row.pausedUntil), fromNanos(s.now), t.active)
		if !wake.IsZero() {
			return holdTenant, s.wakeTenant(c.tenant, nanosOf(wake))
		}
		if !ok {
			return holdTenant, nil
		}
	}
	if c.grp != "" {
		if g, err = ls.group(c.grp); err != nil {
			return "", err
		}
		if g.row != nil {
			ok, wake := rules.GroupMayStart(g.row.limits(), fromNanos(s.now), g.active)
			if !wake.IsZero() {
				return holdGroup, s.wakeGroup(c.grp, nanosOf(wake))
			}
			if !ok {
				return holdGroup, nil
			}
		}
	}
	if t != nil {
		t.active++
	}
	if g != nil && g.row != nil {
		g.active++
		if g.row.minInterval > 0 {
			g.row.lastStart, g.started = s.now, true
		}
	}
	return "", nil
}

// hold moves a blocked candidate to waiting and owes a fill to its other
// scope, where it no longer takes room.
func (ls *leaseScopes) hold(c cand, hold string) error {
	until, err := ls.s.waitUntil(c.tenant)
	if err != nil {
		return err
	}
	if _, err := ls.s.tx.exec(qHoldJob, hold, until, ls.s.now, c.id); err != nil {
		return err
	}
	if ls.fillTenants == nil {
		ls.fillTenants, ls.fillGroups = map[string]bool{}, map[string]bool{}
	}
	if hold == holdGroup && c.tenant != "" {
		ls.fillTenants[c.tenant] = true
	}
	if hold == holdTenant && c.grp != "" {
		ls.fillGroups[c.grp] = true
	}
	return nil
}

var (
	qAdvanceV = hot(`INSERT INTO queue_sched (queue, vtime) VALUES (?1, ?2)
		ON CONFLICT DO UPDATE SET vtime = max(vtime, ?2)`)
	qGroupStarted = hot(`UPDATE job_groups SET last_start = ? WHERE id = ?`)
)

// started records what the picked jobs, now active, change: each queue's
// virtual time, the last start of groups with a crawl delay (and a wake
// when it ends), and the fills owed by jobs moved to waiting.
func (ls *leaseScopes) started(picked []cand) error {
	s := ls.s
	v := map[string]int64{}
	for _, c := range picked {
		if cur, ok := v[c.queue]; !ok || c.start > cur {
			v[c.queue] = c.start
		}
	}
	for q, start := range v {
		if _, err := s.tx.exec(qAdvanceV, q, start); err != nil {
			return err
		}
	}
	for id, g := range ls.groups {
		if !g.started {
			continue
		}
		if _, err := s.tx.exec(qGroupStarted, s.now, id); err != nil {
			return err
		}
		if err := s.wakeGroup(id, s.now+g.row.minInterval); err != nil {
			return err
		}
	}
	for t := range ls.fillTenants {
		if err := s.fillTenant(t); err != nil {
			return err
		}
	}
	for g := range ls.fillGroups {
		if err := s.fillGroup(g); err != nil {
			return err
		}
	}
	return nil
}
