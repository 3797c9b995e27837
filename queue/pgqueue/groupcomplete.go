package pgqueue

import (
	"encoding/json"
	"strconv"

	rules "github.com/sluicehq/sluice/internal/sched"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// progress reads a group's row and counts in the step, as they are at
// now: a pause that has ended is not reported.
func (sc *sched) progress(id string) (*queue.GroupProgress, error) {
	g, err := sc.group(id)
	if err != nil {
		return nil, err
	}
	p := &queue.GroupProgress{
		GroupSpec: g.spec, CancelRequested: g.cancelReq, Done: g.doneAt > 0,
		Completed: g.gone[0], Failed: g.gone[1], Cancelled: g.gone[2],
		CreatedAt: fromNanos(g.createdAt), FinishedAt: fromNanos(g.doneAt),
	}
	if g.pausedUntil > sc.now {
		p.PausedUntil = fromNanos(g.pausedUntil)
	}
	if g.completionJob > 0 {
		p.CompletionJobID = strconv.FormatInt(g.completionJob, 10)
	}
	rows, err := sc.rows(`SELECT state, count(*) FROM __schema__.jobs WHERE grp = $1 AND grp <> '' GROUP BY state`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		backend.AddGroupCount(p, queue.State(st), n)
	}
	return p, rows.Err()
}

// groupSettle completes group id when it has jobs and none unfinished:
// marks it done (only if not yet, so exactly once), enqueues its
// completion job and records the group.completed event, all in the
// caller's transaction.
func (sc *sched) groupSettle(id string) error {
	if err := sc.lock(kindGroup, id); err != nil {
		return err
	}
	var unfinished, total bool
	err := sc.row(`SELECT EXISTS (SELECT 1 FROM __schema__.jobs WHERE grp = $1 AND grp <> '' AND state NOT IN `+finalStates+`),
		EXISTS (SELECT 1 FROM __schema__.jobs WHERE grp = $1 AND grp <> '')
		OR EXISTS (SELECT 1 FROM __schema__.job_groups WHERE id = $1 AND gone_completed + gone_failed + gone_cancelled > 0)`,
		id).Scan(&unfinished, &total)
	if err != nil {
		return err
	}
	if !rules.GroupComplete(b2i(unfinished), b2i(total)) {
		return nil
	}
	var one int
	err = sc.row(`UPDATE __schema__.job_groups SET done_at = $1::bigint, deadline = 0, wake_at = 0,
		ended_at = CASE WHEN completion_kind = '' THEN $1::bigint ELSE 0 END
		WHERE id = $2 AND done_at = 0 RETURNING 1`, sc.now, id).Scan(&one)
	if isNoRows(err) {
		return nil // done already (or the group is gone)
	}
	if err != nil {
		return err
	}
	p, err := sc.progress(id)
	if err != nil {
		return err
	}
	if spec, ok := backend.CompletionJob(*p); ok {
		j := newJob(spec, sc.now)
		if err := sc.insert(j, false); err != nil {
			return err
		}
		if j.State == queue.StatePending {
			sc.readyQueue(j.Queue)
		}
		if err := sc.exec(`UPDATE __schema__.job_groups SET completion_job = $1 WHERE id = $2`, mustID(j.ID), id); err != nil {
			return err
		}
		p.CompletionJobID = j.ID
	}
	return sc.emitGroupCompleted(p)
}

// b2i is 1 for true: a count that is only tested against zero.
func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// emitGroupCompleted writes the group.completed event to the outbox and
// the event log: a group's completion is no job's row change, so no
// trigger writes it.
func (sc *sched) emitGroupCompleted(p *queue.GroupProgress) error {
	data, err := json.Marshal(queue.CompletionReport{Group: p.ID, Total: p.Total(), Completed: p.Completed,
		Failed: p.Failed, Cancelled: p.Cancelled, CancelRequested: p.CancelRequested})
	if err != nil {
		return err
	}
	e := queue.Event{Type: queue.EventGroupCompleted, Group: p.ID, Tenant: p.Tenant, JobID: p.CompletionJobID, Data: data}
	if err := sc.s.emitEvent(sc.ctx, sc.db, e, sc.now); err != nil {
		return err
	}
	return sc.s.logEvent(sc.ctx, sc.db, e, sc.now)
}

// cancelGroup cancels group id's idle jobs and flags its active ones. The
// tenants of its unfinished jobs are locked before the group, in key
// order, as every step locks them.
func (sc *sched) cancelGroup(id string) error {
	rows, err := sc.peekRows(`SELECT DISTINCT tenant FROM __schema__.jobs WHERE grp = $1 AND grp <> ''
		AND state NOT IN `+finalStates+` AND tenant <> ''`, id)
	if err != nil {
		return err
	}
	keys := sc.scopeKeys(nil, "", id)
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return err
		}
		keys = sc.scopeKeys(keys, t, "")
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if err := sc.lockKeys(keys); err != nil {
		return err
	}
	g, err := sc.group(id)
	if err != nil {
		return err
	}
	if g.cancelReq || g.doneAt > 0 {
		return nil
	}
	if err := sc.exec(`UPDATE __schema__.job_groups SET cancel_requested = true, deadline = 0, wake_at = 0 WHERE id = $1`, id); err != nil {
		return err
	}
	cancelled, err := sc.names(`WITH c AS (UPDATE __schema__.jobs SET state = 'cancelled', hold = '', finished_at = $1, updated_at = $1
		WHERE grp = $2 AND grp <> '' AND state IN ('scheduled', 'pending', 'waiting', 'retrying', 'blocked')
		RETURNING id, tenant) SELECT tenant FROM c ORDER BY id`, sc.now, id)
	if err != nil {
		return err
	}
	if err := sc.exec(`UPDATE __schema__.jobs SET cancel_requested = true, updated_at = $1
		WHERE grp = $2 AND grp <> '' AND state = 'active'`, sc.now, id); err != nil {
		return err
	}
	var ts []string
	for _, t := range cancelled {
		ts = addOnce(ts, t)
	}
	for _, t := range ts {
		if err := sc.fillTenant(t); err != nil {
			return err
		}
	}
	if err := sc.groupSettle(id); err != nil {
		return err
	}
	return sc.settleCascade(queue.StateCancelled) // its jobs' children may be in other groups
}

// expireGroups cancels the groups whose TTL has run out, by deadline then
// id.
func (sc *sched) expireGroups() error {
	ids, err := sc.names(`SELECT id FROM __schema__.job_groups WHERE deadline > 0 AND deadline <= $1
		ORDER BY deadline, id LIMIT $2`, sc.now, maintainBatch)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := sc.cancelGroup(id); err != nil {
			return err
		}
	}
	return nil
}

// wakeGroups fills the groups whose wake has come (a pause or crawl delay
// ended, or a fill stopped at its bound), by wake then id.
func (sc *sched) wakeGroups() error {
	ids, err := sc.names(`SELECT id FROM __schema__.job_groups WHERE wake_at > 0 AND wake_at <= $1
		ORDER BY wake_at, id LIMIT $2`, sc.now, maintainBatch)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := sc.lock(kindGroup, id); err != nil {
			return err
		}
		if err := sc.exec(`UPDATE __schema__.job_groups SET wake_at = 0 WHERE id = $1 AND wake_at > 0 AND wake_at <= $2`, id, sc.now); err != nil {
			return err
		}
		if err := sc.fillGroup(id); err != nil {
			return err
		}
	}
	return nil
}
