package sqlstore

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

// FillTenant releases, under the tenant's lock, its best waiting jobs, as
// many as it has room for, skipping those whose group has none.
func (s *Sched) FillTenant(name string) error {
	if name == "" {
		return nil
	}
	if err := s.D.LockScope(ScopeTenant, name); err != nil {
		return err
	}
	waiting, err := s.D.ScopeCount(ScopeTenant, name, queue.StateWaiting)
	if err != nil || waiting == 0 {
		return err
	}
	t, err := s.Tenant(name)
	if err != nil {
		return err
	}
	if t.PausedUntil > s.Now {
		return s.WakeTenant(name, t.PausedUntil)
	}
	adm, err := s.D.ScopeCount(ScopeTenant, name, queue.StatePending, queue.StateActive)
	if err != nil {
		return err
	}
	room := rules.TenantFill(t.Eff.Limit, waiting, adm)
	return s.release(s.St.TenantWaiting, name, room, func(other string) (bool, error) {
		if other == "" {
			return true, nil
		}
		return s.GroupRoom(other, false)
	}, func() error { return s.WakeTenant(name, s.Now) })
}

// FillGroup releases, under the group's lock, its best waiting jobs, as
// many as it has room for, skipping those whose tenant has none.
func (s *Sched) FillGroup(id string) error {
	if id == "" {
		return nil
	}
	if err := s.D.LockScope(ScopeGroup, id); err != nil {
		return err
	}
	waiting, err := s.D.ScopeCount(ScopeGroup, id, queue.StateWaiting)
	if err != nil || waiting == 0 {
		return err
	}
	g, err := s.Group(id)
	if errors.Is(err, queue.ErrGroupNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if until := g.BlockedUntil(); until > s.Now {
		return s.WakeGroup(id, until)
	}
	pending, err := s.D.ScopeCount(ScopeGroup, id, queue.StatePending)
	if err != nil {
		return err
	}
	active, err := s.D.ScopeCount(ScopeGroup, id, queue.StateActive)
	if err != nil {
		return err
	}
	room := rules.GroupFill(g.Limits(), waiting, pending, active)
	return s.release(s.St.GroupWaiting, id, room, func(other string) (bool, error) {
		if other == "" {
			return true, nil
		}
		return s.TenantRoom(other, false)
	}, func() error { return s.WakeGroup(id, s.Now) })
}

// release moves up to room waiting jobs of a scope (listed best first by
// query) to pending, those for which otherRoom says their other scope has
// room. It reads just enough jobs first, and looks fillScan further only
// when it had to skip some. When it stops at maxRelease, more remain:
// again wakes the scope.
func (s *Sched) release(query, name string, room int64, otherRoom func(string) (bool, error), again func() error) error {
	if room <= 0 {
		return nil
	}
	limit := min(room, maxRelease)
	released := int64(0)
	for _, n := range []int64{limit, limit + fillScan} {
		list, err := s.Waiting(query, name, n)
		if err != nil {
			return err
		}
		skipped := false
		for _, w := range list {
			if released == limit {
				break
			}
			ok, err := otherRoom(w.Other)
			if err != nil {
				return err
			}
			if !ok {
				skipped = true
				continue
			}
			done, err := s.Tx.Exec(s.St.Release, s.Now, w.ID)
			if err != nil {
				return err
			}
			if done == 0 {
				continue // no longer waiting (its caller has it locked, so it always is)
			}
			s.ReadyQueue(w.Queue)
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

// WaitingJob is a job of a scope as Waiting lists it: Other is its group
// (when listed for a tenant) or its tenant (for a group).
type WaitingJob struct {
	ID           int64
	Queue, Other string
}

// Waiting runs query, of a scope's jobs (id, queue, the other scope), for
// scope name and up to n jobs.
func (s *Sched) Waiting(query, name string, n int64) ([]WaitingJob, error) {
	rows, err := s.Tx.Query(query, name, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list []WaitingJob
	for rows.Next() {
		var w WaitingJob
		if err := rows.Scan(&w.ID, &w.Queue, &w.Other); err != nil {
			return nil, err
		}
		list = append(list, w)
	}
	return list, rows.Err()
}
