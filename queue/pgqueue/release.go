package pgqueue

import (
	"time"

	rules "github.com/sluicehq/sluice/internal/sched"
)

// fillScan bounds how many waiting jobs one fill looks at beyond the room
// it fills: jobs whose other scope is full are skipped.
const fillScan = 64

// maxRelease bounds how many jobs one fill releases; a fill that stops
// there wakes the scope again for the next Lease.
const maxRelease = 1000

const (
	qTenantWaiting = `SELECT id, queue, grp FROM __schema__.jobs WHERE tenant = $1 AND tenant <> '' AND state = 'waiting'
		ORDER BY band, vrank, id LIMIT $2 FOR UPDATE`
	qRelease = `UPDATE __schema__.jobs SET state = 'pending', hold = '', wait_until = 0, updated_at = $1
		WHERE id = $2 AND state = 'waiting' RETURNING 1`
)

// fillTenant releases, under the tenant's lock, its best waiting jobs, as
// many as it has room for, skipping those whose group has none.
func (sc *sched) fillTenant(name string) error {
	if name == "" {
		return nil
	}
	if err := sc.lock(kindTenant, name); err != nil {
		return err
	}
	waiting, err := sc.tenantCount(name, "waiting")
	if err != nil || waiting == 0 {
		return err
	}
	t, err := sc.tenant(name)
	if err != nil {
		return err
	}
	if t.pausedUntil > sc.now {
		return sc.wakeTenant(name, t.pausedUntil)
	}
	adm, err := sc.admitted(name)
	if err != nil {
		return err
	}
	room := rules.TenantFill(t.eff.Limit, waiting, adm)
	return sc.release(qTenantWaiting, name, room, func(other string) (bool, error) {
		if other == "" {
			return true, nil
		}
		return sc.groupRoom(other, false)
	}, func() error { return sc.wakeTenant(name, sc.now) })
}

// release moves up to room waiting jobs of a scope (listed best first by
// query) to pending, those for which otherRoom says their other scope has
// room. When it stops at maxRelease, more remain: again wakes the scope.
func (sc *sched) release(query, name string, room int64, otherRoom func(string) (bool, error), again func() error) error {
	if room <= 0 {
		return nil
	}
	limit := min(room, maxRelease)
	released := int64(0)
	for _, n := range []int64{limit, limit + fillScan} {
		list, err := sc.waiting(query, name, n)
		if err != nil {
			return err
		}
		skipped := false
		for _, w := range list {
			if released == limit {
				break
			}
			ok, err := otherRoom(w.other)
			if err != nil {
				return err
			}
			if !ok {
				skipped = true
				continue
			}
			var one int
			err = sc.row(qRelease, sc.now, w.id).Scan(&one)
			if isNoRows(err) {
				continue // no longer waiting (its caller has it locked, so it always is)
			}
			if err != nil {
				return err
			}
			sc.readyQueue(w.queue)
			released++
		}
		if released == limit || !skipped || int64(len(list)) < n {
			break
		}
	}
	if released == maxRelease && room > maxRelease {
		return again()
	}
	return nil
}

// waitingJob is a waiting job as release sees it: other is its group
// (when releasing for a tenant) or its tenant (for a group).
type waitingJob struct {
	id           int64
	queue, other string
}

func (sc *sched) waiting(query, name string, n int64) ([]waitingJob, error) {
	rows, err := sc.rows(query, name, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list []waitingJob
	for rows.Next() {
		var w waitingJob
		if err := rows.Scan(&w.id, &w.queue, &w.other); err != nil {
			return nil, err
		}
		list = append(list, w)
	}
	return list, rows.Err()
}

// durationOf reads a stored duration in nanoseconds.
func durationOf(n int64) time.Duration { return time.Duration(n) }
