package sqlstore

import (
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// SetTenant stores a tenant's settings, under its lock, and fills it at
// once; new defaults ("") fill every tenant with waiting jobs.
func (s *Sched) SetTenant(tenant string, cfg queue.TenantConfig) error {
	if tenant != "" {
		if err := s.D.LockScope(ScopeTenant, tenant); err != nil {
			return err
		}
	}
	if _, err := s.Tx.Exec(s.St.SetTenant, tenant, cfg.Limit, cfg.Weight, cfg.Backlog, int64(cfg.MaxWait)); err != nil {
		return err
	}
	s.Forget()
	if tenant != "" {
		return s.FillTenant(tenant)
	}
	names, err := s.Names(s.St.TenantsWaiting)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := s.FillTenant(n); err != nil {
			return err
		}
	}
	return nil
}

// Pause pauses a tenant, group or queue for d from now (d <= 0 resumes
// it) and returns the end of its pause (zero: not paused). Pausing a tenant or group moves
// its pending jobs to waiting in the same step (a queue's are left
// pending: Lease skips the queue); resuming releases what there is room
// for.
func (s *Sched) Pause(scope queue.Scope, d time.Duration) (time.Time, error) {
	until, err := s.pause(scope, d)
	if err != nil || until <= s.Now {
		return time.Time{}, err
	}
	return schedTime(until), nil
}

func (s *Sched) pause(scope queue.Scope, d time.Duration) (int64, error) {
	end := int64(0)
	if d > 0 {
		end = s.Now + int64(min(d, queue.MaxDuration))
	}
	switch scope.Kind {
	case queue.ScopeTenant:
		return s.pauseTenant(scope.Name, end)
	case queue.ScopeGroup:
		return s.pauseGroup(scope.Name, end)
	case queue.ScopeQueue:
		var until int64
		if err := s.Tx.QueryRow(s.St.PauseQueue, scope.Name, end).Scan(&until); err != nil {
			return 0, err
		}
		if end == 0 {
			// Resumed: its pending jobs are leasable again, so wake the
			// workers instead of leaving them to their next poll.
			s.ReadyQueue(scope.Name)
		}
		return until, nil
	}
	return 0, backend.InvalidArgument(queue.Field("Scope", "Kind"), "must be tenant, group or queue, got %q", scope.Kind)
}

// pauseTenant pauses tenant name until end (0: resumes it): its pending
// jobs wait, and their groups get the room back.
func (s *Sched) pauseTenant(name string, end int64) (int64, error) {
	if err := s.D.LockScope(ScopeTenant, name); err != nil {
		return 0, err
	}
	var until int64
	if err := s.Tx.QueryRow(s.St.PauseTenant, name, end).Scan(&until); err != nil {
		return 0, err
	}
	s.Forget()
	if until <= s.Now {
		return until, s.FillTenant(name)
	}
	if err := s.WakeTenant(name, until); err != nil {
		return 0, err
	}
	waitEnd, err := s.WaitUntil(name)
	if err != nil {
		return 0, err
	}
	held, err := s.Names(s.St.HoldTenantPending, waitEnd, s.Now, name)
	if err != nil {
		return 0, err
	}
	// The held jobs left room in their groups.
	var gs []string
	for _, g := range held {
		gs = schedAddOnce(gs, g)
	}
	for _, g := range gs {
		if err := s.FillGroup(g); err != nil {
			return 0, err
		}
	}
	return until, nil
}

// pauseGroup pauses group id until end (0: resumes it): its pending jobs
// wait, each with its own tenant's MaxWait deadline, and their tenants get
// the room back.
func (s *Sched) pauseGroup(id string, end int64) (int64, error) {
	if err := s.D.LockScope(ScopeGroup, id); err != nil {
		return 0, err
	}
	rows, err := s.Tx.Query(s.St.PauseGroup, end, id)
	if err != nil {
		return 0, err
	}
	var until int64
	found := rows.Next()
	if found {
		err = rows.Scan(&until)
	}
	rows.Close()
	if err == nil {
		err = rows.Err()
	}
	if err != nil {
		return 0, err
	}
	if !found {
		return 0, schedErrorf(queue.ErrGroupNotFound, "group %s", id)
	}
	if until <= s.Now {
		return until, s.FillGroup(id)
	}
	if err := s.WakeGroup(id, until); err != nil {
		return 0, err
	}
	jobs, err := s.Waiting(s.St.GroupPending, id, 1<<62)
	if err != nil {
		return 0, err
	}
	var tenants []string
	for _, j := range jobs {
		ok, err := s.Hold(j.ID, j.Other, HoldGroup)
		if err != nil {
			return 0, err
		}
		if ok {
			tenants = schedAddOnce(tenants, j.Other)
		}
	}
	// The held jobs left room in their tenants.
	for _, t := range tenants {
		if err := s.FillTenant(t); err != nil {
			return 0, err
		}
	}
	return until, nil
}

// SetAging sets queue q's aging step.
func (s *Sched) SetAging(q string, step int) error {
	_, err := s.Tx.Exec(s.St.SetAging, q, step)
	return err
}

// ReadTenantInfo reads a tenant's settings and load through tx, in one
// transaction so they agree; for "" the defaults.
func ReadTenantInfo(tx Tx, st *SchedStmts, tenant string, now int64) (*queue.TenantInfo, error) {
	info := &queue.TenantInfo{Tenant: tenant}
	var t TenantRow
	def, err := readTenantRows(tx, st.TenantRows, tenant, &t)
	if err != nil {
		return nil, err
	}
	info.Own, info.Effective = t.Own, t.Own.Effective(def)
	if t.PausedUntil > now {
		info.PausedUntil = schedTime(t.PausedUntil)
	}
	rows, err := tx.Query(st.TenantCounts, tenant)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var state string
		var n int64
		if err := rows.Scan(&state, &n); err != nil {
			return nil, err
		}
		switch queue.State(state) {
		case queue.StateScheduled:
			info.Scheduled = n
		case queue.StatePending:
			info.Pending = n
		case queue.StateWaiting:
			info.Waiting = n
		case queue.StateActive:
			info.Active = n
		case queue.StateRetrying:
			info.Retrying = n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return info, nil
}
