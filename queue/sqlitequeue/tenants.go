package sqlitequeue

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

var _ backend.TenantBackend = (*Backend)(nil)

var (
	qSetTenant = hot(`INSERT INTO tenants (tenant, lim, weight, backlog, max_wait) VALUES (?1, ?2, ?3, ?4, ?5)
		ON CONFLICT DO UPDATE SET lim = ?2, weight = ?3, backlog = ?4, max_wait = ?5`)
	qTenantsWaiting = hot(`SELECT name FROM scope_counts WHERE kind = 't' AND state = 'waiting' AND n > 0`)
	qSetAging       = hot(`INSERT INTO queue_sched (queue, aging) VALUES (?1, ?2)
		ON CONFLICT DO UPDATE SET aging = ?2`)
	qPauseTenant = hot(`INSERT INTO tenants (tenant, paused_until) VALUES (?1, ?2)
		ON CONFLICT DO UPDATE SET paused_until = CASE WHEN ?2 = 0 THEN 0 ELSE max(paused_until, ?2) END
		RETURNING paused_until`)
	qPauseGroup = hot(`UPDATE job_groups SET paused_until = CASE WHEN ?1 = 0 THEN 0 ELSE max(paused_until, ?1) END
		WHERE id = ?2 RETURNING paused_until`)
	qPauseQueue = hot(`INSERT INTO queue_sched (queue, paused_until) VALUES (?1, ?2)
		ON CONFLICT DO UPDATE SET paused_until = CASE WHEN ?2 = 0 THEN 0 ELSE max(paused_until, ?2) END
		RETURNING paused_until`)
	qHoldTenantPending = hot(`UPDATE jobs SET state = 'waiting', hold = 'tenant', wait_until = ?1, updated_at = ?2
		WHERE tenant = ?3 AND tenant != '' AND state = 'pending' RETURNING grp`)
	qGroupPending = hot(`SELECT id, queue, tenant FROM jobs WHERE grp = ? AND grp != '' AND state = 'pending'
		ORDER BY band, vrank, id LIMIT ?`)
)

// SetTenant implements backend.TenantBackend.
func (b *Backend) SetTenant(ctx context.Context, tenant string, cfg queue.TenantConfig) error {
	return b.writeSched(ctx, "set tenant", func(s *sched) error {
		if _, err := s.tx.exec(qSetTenant, tenant, cfg.Limit, cfg.Weight, cfg.Backlog, int64(cfg.MaxWait)); err != nil {
			return err
		}
		s.forget()
		if tenant != "" {
			return s.fillTenant(tenant)
		}
		// New defaults: every tenant with waiting jobs may have room now.
		names, err := s.names(qTenantsWaiting)
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := s.fillTenant(n); err != nil {
				return err
			}
		}
		return nil
	})
}

// Tenant implements backend.TenantBackend. It reads the settings and counts
// in one read transaction, so they agree.
func (b *Backend) Tenant(ctx context.Context, tenant string) (*queue.TenantInfo, error) {
	if b.closed.Load() {
		return nil, b.wrap("tenant", queue.ErrClosed)
	}
	info := &queue.TenantInfo{Tenant: tenant}
	err := b.read(ctx, func(tx *sql.Tx) error {
		def, err := readDefaults(tx.QueryRowContext(ctx, qDefaults))
		if err != nil {
			return err
		}
		var maxWait, paused int64
		err = tx.QueryRowContext(ctx, qTenantRow, tenant).Scan(&info.Own.Limit, &info.Own.Weight,
			&info.Own.Backlog, &maxWait, &paused)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		info.Own.MaxWait = time.Duration(maxWait)
		info.Effective = info.Own.Effective(def)
		if paused > b.now() {
			info.PausedUntil = fromNanos(paused)
		}
		c, err := readCounts(queryOn(ctx, tx), kindTenant, tenant)
		if err != nil {
			return err
		}
		info.Scheduled, info.Pending, info.Waiting = c[queue.StateScheduled], c[queue.StatePending], c[queue.StateWaiting]
		info.Active, info.Retrying = c[queue.StateActive], c[queue.StateRetrying]
		return nil
	})
	if err != nil {
		return nil, b.wrap("tenant", err)
	}
	return info, nil
}

// SetAging implements backend.TenantBackend.
func (b *Backend) SetAging(ctx context.Context, q string, step int) error {
	return b.write(ctx, "set aging", func(tx *wtx) error {
		_, err := tx.exec(qSetAging, q, step)
		return err
	})
}

// Pause implements backend.TenantBackend. Pausing a tenant or group moves its
// pending jobs to waiting in the same step (a queue's are left pending:
// Lease skips the queue); resuming releases what there is room for.
func (b *Backend) Pause(ctx context.Context, scope queue.Scope, d time.Duration) (time.Time, error) {
	var until int64
	err := b.writeSched(ctx, "pause", func(s *sched) error {
		end := int64(0)
		if d > 0 {
			end = after(s.now, d)
		}
		var err error
		switch scope.Kind {
		case queue.ScopeTenant:
			until, err = s.pauseTenant(scope.Name, end)
		case queue.ScopeGroup:
			until, err = s.pauseGroup(scope.Name, end)
		case queue.ScopeQueue:
			err = s.tx.queryRow(qPauseQueue, scope.Name, end).Scan(&until)
			if end == 0 {
				// Resumed: its pending jobs are leasable again, so wake the
				// workers instead of leaving them to their next poll.
				s.readyQueue(scope.Name)
			}
		default:
			err = backend.InvalidArgument(queue.Field("Scope", "Kind"), "must be tenant, group or queue, got %q", scope.Kind)
		}
		return err
	})
	if err != nil || until <= b.now() {
		return time.Time{}, err
	}
	return fromNanos(until), nil
}

func (s *sched) pauseTenant(name string, end int64) (int64, error) {
	var until int64
	if err := s.tx.queryRow(qPauseTenant, name, end).Scan(&until); err != nil {
		return 0, err
	}
	s.forget()
	if until <= s.now {
		return until, s.fillTenant(name)
	}
	if err := s.wakeTenant(name, until); err != nil {
		return 0, err
	}
	waitEnd, err := s.waitUntil(name)
	if err != nil {
		return 0, err
	}
	groups, err := s.names(qHoldTenantPending, waitEnd, s.now, name)
	if err != nil {
		return 0, err
	}
	// The held jobs left room in their groups.
	for _, g := range groups {
		if g != "" {
			if err := s.fillGroup(g); err != nil {
				return 0, err
			}
		}
	}
	return until, nil
}

func (s *sched) pauseGroup(id string, end int64) (int64, error) {
	var until int64
	err := s.tx.queryRow(qPauseGroup, end, id).Scan(&until)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, errorf(queue.ErrGroupNotFound, "group %s", id)
	}
	if err != nil {
		return 0, err
	}
	if until <= s.now {
		return until, s.fillGroup(id)
	}
	if err := s.wakeGroup(id, until); err != nil {
		return 0, err
	}
	// Each job gets its own tenant's MaxWait deadline.
	jobs, err := s.waiting(qGroupPending, id, -1)
	if err != nil {
		return 0, err
	}
	tenants := map[string]bool{}
	for _, j := range jobs {
		waitEnd, err := s.waitUntil(j.other)
		if err != nil {
			return 0, err
		}
		if _, err := s.tx.exec(qHoldJob, holdGroup, waitEnd, s.now, j.id); err != nil {
			return 0, err
		}
		tenants[j.other] = j.other != ""
	}
	// The held jobs left room in their tenants.
	for t, ok := range tenants {
		if ok {
			if err := s.fillTenant(t); err != nil {
				return 0, err
			}
		}
	}
	return until, nil
}
