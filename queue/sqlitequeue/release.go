package sqlitequeue

import (
	"errors"

	rules "github.com/sluicehq/sluice/internal/sched"
	"github.com/sluicehq/sluice/queue"
)

// fillScan bounds how many waiting jobs one fill looks at beyond the room
// it fills: jobs whose other scope is full are skipped, and looked at again
// when that scope has room.
const fillScan = 64

// maxRelease bounds how many jobs one fill releases; a fill that stops
// there wakes the scope again for the next Lease.
const maxRelease = 1000

var (
	qTenantWaiting = hot(`SELECT id, queue, grp FROM jobs WHERE tenant = ? AND tenant != '' AND state = 'waiting'
		ORDER BY band, vrank, id LIMIT ?`)
	qGroupWaiting = hot(`SELECT id, queue, tenant FROM jobs WHERE grp = ? AND grp != '' AND state = 'waiting'
		ORDER BY band, vrank, id LIMIT ?`)
	qRelease = hot(`UPDATE jobs SET state = 'pending', hold = '', wait_until = 0, updated_at = ?
		WHERE id = ? AND state = 'waiting'`)
)

// fillTenant releases the tenant's best waiting jobs, as many as it has
// room for, skipping those whose group has none.
func (s *sched) fillTenant(name string) error {
	c, err := s.counts(kindTenant, name)
	if err != nil || c[queue.StateWaiting] == 0 {
		return err
	}
	t, err := s.tenant(name)
	if err != nil {
		return err
	}
	if t.pausedUntil > s.now {
		return s.wakeTenant(name, t.pausedUntil)
	}
	room := rules.TenantFill(t.eff.Limit, c[queue.StateWaiting], c.admitted())
	return s.release(qTenantWaiting, name, room, func(other string) (bool, error) {
		if other == "" {
			return true, nil
		}
		return s.groupRoom(other, false)
	}, func() error { return s.wakeTenant(name, s.now) })
}

// fillGroup releases the group's best waiting jobs, as many as it has room
// for, skipping those whose tenant has none.
func (s *sched) fillGroup(id string) error {
	c, err := s.counts(kindGroup, id)
	if err != nil || c[queue.StateWaiting] == 0 {
		return err
	}
	g, err := s.group(id)
	if errors.Is(err, queue.ErrGroupNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if until := g.blockedUntil(); until > s.now {
		return s.wakeGroup(id, until)
	}
	room := rules.GroupFill(g.limits(), c[queue.StateWaiting], c[queue.StatePending], c[queue.StateActive])
	return s.release(qGroupWaiting, id, room, func(other string) (bool, error) {
		if other == "" {
			return true, nil
		}
		return s.tenantRoom(other, false)
	}, func() error { return s.wakeGroup(id, s.now) })
}

// release moves up to room waiting jobs of a scope (listed best first by
// query) to pending, those for which otherRoom says their other scope has
// room. It reads just enough jobs first, and looks fillScan further only
// when it had to skip some. When it stops at maxRelease, more remain:
// again wakes the scope.
func (s *sched) release(query, name string, room int64, otherRoom func(string) (bool, error), again func() error) error {
	if room <= 0 {
		return nil
	}
	limit := min(room, maxRelease)
	released := int64(0)
	for _, n := range []int64{limit, limit + fillScan} {
		list, err := s.waiting(query, name, n)
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
			if _, err := s.tx.exec(qRelease, s.now, w.id); err != nil {
				return err
			}
			s.readyQueue(w.queue)
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

func (s *sched) waiting(query, name string, n int64) ([]waitingJob, error) {
	rows, err := s.tx.query(query, name, n)
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
