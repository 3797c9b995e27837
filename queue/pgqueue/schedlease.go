package pgqueue

import (
	"fmt"
	"sort"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// maintainBatch bounds the scopes woken, the due jobs placed and the
// waiting jobs expired by one Lease.
const maintainBatch = 100

// pickRounds bounds how often pick looks for more candidates after moving
// blocked ones to waiting.
const pickRounds = 4

// leaseSched is a Lease that runs the scheduler, in one transaction, in
// the order every store does it (internal/sched): the due jobs of the
// queues become ready, queue by queue; the tenants whose pause ended
// release their waiting jobs; jobs that waited past their tenant's MaxWait
// fail; then the best pending jobs their tenants let start are leased.
func (s *Store) leaseSched(sc *sched, req backend.LeaseRequest, prefix string) ([]queue.Lease, error) {
	queues := dedupe(req.Queues)
	if err := sc.exec(orderedReads); err != nil {
		return nil, err
	}
	for _, q := range queues {
		if err := sc.promoteDue(q); err != nil {
			return nil, err
		}
	}
	for _, step := range []func() error{sc.wakeTenants, sc.wakeGroups, sc.expireWaits, sc.expireGroups} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	picked, ls, err := sc.pick(queues, req.Max)
	if err != nil {
		return nil, err
	}
	if len(picked) == 0 && len(sc.locks.skip) > 0 && !sc.locks.last {
		// Every job it could start needs a lock another step holds: run
		// again, waiting for them first (the last run leases nothing).
		return nil, &scopeBusy{keys: sc.locks.skip}
	}
	var out []queue.Lease
	if len(picked) > 0 {
		ids := make([]int64, len(picked))
		for i, c := range picked {
			ids[i] = c.id
		}
		rows, err := sc.db.query(sc.ctx, qualify(`WITH l AS (UPDATE __schema__.jobs SET state = 'active', attempt = attempt + 1,
			lease_token = $1 || '.' || id, lease_until = $2, worker_id = $3, started_at = $4, updated_at = $4, wait_until = 0
			WHERE id = ANY($5) AND state = 'pending' RETURNING `+jobCols("")+`, lease_token, band, vrank, vstart, vfinish),
			`+keepStartTags("l")+`
			SELECT `+jobCols("l")+`, l.lease_token, l.band, l.vrank FROM l`, s.schema),
			prefix, after(sc.now, req.LeaseFor), req.WorkerID, sc.now, ids)
		if err != nil {
			return nil, err
		}
		if out, err = scanLeases(rows); err != nil {
			return nil, err
		}
	}
	if err := ls.started(); err != nil {
		return nil, err
	}
	return out, nil
}

// promoteDue makes queue q's due jobs ready, by due time then id: the
// plain ones before the first due job of a tenant or group by one
// statement, then each in turn, plain or not. A job ready for the first
// time gets its fair tag, so the tags follow the due order whatever the
// jobs' scopes; then it goes pending or waits. The due jobs are read
// before their scopes are locked: each is placed only if it is still as
// it was read (another Lease may have placed it meanwhile).
func (sc *sched) promoteDue(q string) error {
	if err := sc.db.exec(sc.ctx, sc.s.q.promoteOne, q, sc.now); err != nil {
		return err
	}
	rows, err := sc.rows(`SELECT id, state, tenant, grp, priority, vstart IS NOT NULL FROM __schema__.jobs
		WHERE queue = $1 AND state IN ('scheduled', 'retrying') AND run_at <= $2
		ORDER BY run_at, id LIMIT $3`, q, sc.now, maintainBatch)
	if err != nil {
		return err
	}
	var list []placing
	for rows.Next() {
		p := placing{queue: q}
		if err := rows.Scan(&p.id, &p.from, &p.tenant, &p.grp, &p.priority, &p.hasTag); err != nil {
			rows.Close()
			return err
		}
		list = append(list, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, p := range list {
		if _, err := sc.place(p); err != nil {
			return err
		}
	}
	return nil
}

// placing is a job to make ready (place), as it was read.
type placing struct {
	id                 int64
	queue, tenant, grp string
	priority           int
	from               string // its state when read
	hasTag, self       bool   // self: it counts as pending already
}

// qPlace moves a job to pending or waiting, with its first fair tag when
// $5 is not null, if it is still in state $10 with a tag exactly when $11
// says so and, unless it is pending, due.
const qPlace = `UPDATE __schema__.jobs SET state = $1, hold = $2, wait_until = $3, updated_at = $4,
	vstart = coalesce($5, vstart), vfinish = coalesce($6, vfinish), band = coalesce($7, band), vrank = coalesce($8, vrank)
	WHERE id = $9 AND state = $10 AND (vstart IS NOT NULL) = $11 AND (state = 'pending' OR run_at <= $4)
	RETURNING 1`

// place makes job p ready: it gets its fair tag unless it has one, then
// goes pending, or waiting for its tenant or group. It reports false, and
// changes nothing, when the job is no longer as it was read.
func (sc *sched) place(p placing) (bool, error) {
	if err := sc.lockScopes(p.tenant, p.grp); err != nil {
		return false, err
	}
	hold, err := sc.holdFor(p.tenant, p.grp, p.self)
	if err != nil {
		return false, err
	}
	state, waitEnd := queue.StatePending, int64(0)
	if hold != "" {
		state = queue.StateWaiting
		if waitEnd, err = sc.waitUntil(p.tenant); err != nil {
			return false, err
		}
	}
	tag, untag, err := sc.firstTag(p)
	if err != nil {
		return false, err
	}
	var one int
	err = sc.row(qPlace, string(state), hold, waitEnd, sc.now, tag[0], tag[1], tag[2], tag[3], p.id, p.from, p.hasTag).Scan(&one)
	if isNoRows(err) {
		untag()
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if hold == "" {
		sc.readyQueue(p.queue)
	}
	return true, nil
}

// firstTag returns the fair tag (start, finish, band, rank) of a job p
// becoming ready for the first time, all nil for one that has a tag, and
// the function that gives the tag back to the step when the job is not
// placed after all.
func (sc *sched) firstTag(p placing) (tag [4]*int64, untag func(), err error) {
	untag = func() {}
	if p.hasTag {
		return tag, untag, nil
	}
	k := fairKey{p.queue, p.tenant}
	prev, had := sc.finish[k]
	start, finish, band, rank, err := sc.tag(p.queue, p.tenant, p.priority)
	if err != nil {
		return tag, untag, err
	}
	untag = func() {
		if had {
			sc.finish[k] = prev
		} else {
			delete(sc.finish, k)
		}
	}
	return [4]*int64{&start, &finish, &band, &rank}, untag, nil
}

// wakeTenants fills the tenants whose wake has come (a pause ended, or a
// fill stopped at its bound), by wake then name.
func (sc *sched) wakeTenants() error {
	names, err := sc.names(`SELECT tenant FROM __schema__.tenants WHERE wake_at > 0 AND wake_at <= $1
		ORDER BY wake_at, tenant LIMIT $2`, sc.now, maintainBatch)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := sc.lock(kindTenant, n); err != nil {
			return err
		}
		if err := sc.exec(`UPDATE __schema__.tenants SET wake_at = 0 WHERE tenant = $1 AND wake_at > 0 AND wake_at <= $2`, n, sc.now); err != nil {
			return err
		}
		if err := sc.fillTenant(n); err != nil {
			return err
		}
	}
	return nil
}

// names runs a query that lists one text column.
func (sc *sched) names(query string, args ...any) ([]string, error) {
	rows, err := sc.rows(query, args...)
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

// expireWaits fails the waiting jobs whose MaxWait deadline has passed,
// then settles them once.
func (sc *sched) expireWaits() error {
	rows, err := sc.rows(`SELECT `+jobCols("")+` FROM __schema__.jobs
		WHERE state = 'waiting' AND wait_until > 0 AND wait_until <= $1 ORDER BY wait_until, id LIMIT $2`, sc.now, maintainBatch)
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
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var done []*queue.Job
	for _, j := range list {
		ok, err := sc.failWaiting(j)
		if err != nil {
			return err
		}
		if ok {
			done = append(done, j)
		}
	}
	return sc.settleJobs(done)
}

// failWaiting fails a job that waited past its tenant's MaxWait, unless it
// left waiting before the tenant's lock was taken.
func (sc *sched) failWaiting(j *queue.Job) (bool, error) {
	if err := sc.lockScopes(j.Tenant, j.Group); err != nil {
		return false, err
	}
	t, err := sc.tenant(j.Tenant)
	if err != nil {
		return false, err
	}
	id, _ := parseID(j.ID)
	msg := fmt.Sprintf("%v: waited longer than tenant %s's MaxWait of %s", queue.ErrBacklogFull, j.Tenant, t.eff.MaxWait)
	hist, err := appendError(j.Errors, queue.AttemptError{Attempt: j.Attempt, At: fromNanos(sc.now), Error: msg})
	if err != nil {
		return false, err
	}
	var one int
	err = sc.row(`UPDATE __schema__.jobs SET state = 'failed', hold = '', last_error = $1, errors = $2,
		finished_at = $3, updated_at = $3 WHERE id = $4 AND state = 'waiting' AND wait_until > 0 AND wait_until <= $3
		RETURNING 1`, msg, hist, sc.now, id).Scan(&one)
	if isNoRows(err) {
		return false, nil
	}
	return err == nil, err
}

// cand is a pending job Lease may hand out.
type cand struct {
	id, band, rank     int64
	queue, tenant, grp string
	pos, qi            int // place in its queue's list, and the queue's index
}

// pick chooses up to max pending jobs of queues in the fair order,
// checking each against its tenant's limit with the counts of this step;
// a candidate that is blocked moves to waiting. Across queues, the lower
// band goes first and queues take turns within a band. It returns what
// the picks changed, for started.
func (sc *sched) pick(queues []string, max int) ([]cand, *leaseScopes, error) {
	ls := &leaseScopes{sc: sc, active: map[string]int64{}}
	var picked []cand
	taken := map[int64]bool{}
	for round := 0; round < pickRounds && len(picked) < max; round++ {
		n := max
		if round > 0 {
			n = len(picked) + 2*(max-len(picked)) + 16<<round
		}
		cands, full, err := sc.candidates(queues, n)
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
			ok, err := sc.hold(c.id, c.tenant, hold)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				ls.owe(c, hold)
				held++
			}
		}
		if held == 0 || !full {
			break
		}
	}
	return picked, ls, nil
}

// candidates lists up to n pending jobs of each queue not paused, locked
// for this step (SKIP LOCKED: another Lease holds the others), merged,
// and reports whether any queue had more. A job is a candidate only when
// the step holds its tenant's and group's locks: they are taken as the
// jobs are read, without waiting (tryScopes), and a job whose scope
// another transaction holds is left for a later Lease, as a row another
// Lease holds is.
func (sc *sched) candidates(queues []string, n int) ([]cand, bool, error) {
	var all []cand
	full := false
	for qi, q := range queues {
		got, more, err := sc.queueCandidates(q, qi, n)
		if err != nil {
			return nil, false, err
		}
		all = append(all, got...)
		full = full || more
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

// queueCandidates is candidates for queue q, the qi-th of the Lease.
func (sc *sched) queueCandidates(q string, qi, n int) ([]cand, bool, error) {
	var paused int64
	err := sc.row(`SELECT paused_until FROM __schema__.queue_sched WHERE queue = $1`, q).Scan(&paused)
	if err != nil && !isNoRows(err) {
		return nil, false, err
	}
	if paused > sc.now {
		return nil, false, nil
	}
	rows, err := sc.rows(`SELECT id, tenant, grp, band, vrank FROM __schema__.jobs
		WHERE queue = $1 AND state = 'pending' ORDER BY band, vrank, id LIMIT $2 FOR UPDATE SKIP LOCKED`, q, n)
	if err != nil {
		return nil, false, err
	}
	var read []cand
	for rows.Next() {
		c := cand{queue: q, pos: len(read), qi: qi}
		if err := rows.Scan(&c.id, &c.tenant, &c.grp, &c.band, &c.rank); err != nil {
			rows.Close()
			return nil, false, err
		}
		read = append(read, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	var out []cand
	for _, c := range read {
		ok, err := sc.tryScopes(c.tenant, c.grp)
		if err != nil {
			return nil, false, err
		}
		if ok {
			out = append(out, c)
		}
	}
	return out, len(read) == n, nil
}

// dedupe returns qs without repeats, in order.
func dedupe(qs []string) []string {
	if len(qs) == 1 {
		return qs
	}
	seen := make(map[string]bool, len(qs))
	out := qs[:0:0]
	for _, q := range qs {
		if !seen[q] {
			seen[q] = true
			out = append(out, q)
		}
	}
	return out
}
