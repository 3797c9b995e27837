package pgqueue

import (
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// InsertCompletion implements sqlstore.SchedDialect.
func (sc *sched) InsertCompletion(spec queue.JobSpec) (int64, error) {
	j := sqlstore.NewJob(spec, sc.now)
	if err := sc.insert(j, false); err != nil {
		return 0, err
	}
	if j.State == queue.StatePending {
		sc.ReadyQueue(j.Queue)
	}
	return mustID(j.ID), nil
}

// EmitEvent implements sqlstore.SchedDialect: the event goes to the
// outbox and the event log, as no trigger writes what is no job's row
// change.
func (sc *sched) EmitEvent(e queue.Event) error {
	if err := sc.s.emitEvent(sc.ctx, sc.db, e, sc.now); err != nil {
		return err
	}
	return sc.s.logEvent(sc.ctx, sc.db, e, sc.now)
}

// LockGroupJobs implements sqlstore.SchedDialect: the tenants of the
// group's unfinished jobs are locked with the group, in key order, as
// every step locks them.
func (sc *sched) LockGroupJobs(id string) error {
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
	return sc.lockKeys(keys)
}

// JobCancelled implements sqlstore.SchedDialect: a trigger writes the
// job's events.
func (sc *sched) JobCancelled(id int64) error { return nil }
