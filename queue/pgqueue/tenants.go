package pgqueue

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

var _ backend.TenantBackend = (*Store)(nil)

// SetTenant implements backend.TenantBackend. New settings of a tenant fill
// it at once; new defaults ("") fill every tenant with waiting jobs.
func (s *Store) SetTenant(ctx context.Context, tenant string, cfg queue.TenantConfig) error {
	return s.schedTx(ctx, "set tenant", func(sc *sched) error {
		if err := sc.lock(kindTenant, tenant); err != nil {
			return err
		}
		err := sc.exec(`INSERT INTO __schema__.tenants (tenant, lim, weight, backlog, max_wait) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (tenant) DO UPDATE SET lim = $2, weight = $3, backlog = $4, max_wait = $5`,
			tenant, cfg.Limit, cfg.Weight, cfg.Backlog, int64(cfg.MaxWait))
		if err != nil {
			return err
		}
		sc.forget()
		if tenant != "" {
			return sc.fillTenant(tenant)
		}
		names, err := sc.names(`SELECT DISTINCT tenant FROM __schema__.jobs WHERE tenant <> '' AND state = 'waiting'`)
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := sc.fillTenant(n); err != nil {
				return err
			}
		}
		return nil
	})
}

// qTenantCounts counts a tenant's unfinished jobs by state.
const qTenantCounts = `SELECT state, count(*) FROM __schema__.jobs
	WHERE tenant = $1 AND tenant <> '' AND state NOT IN ` + finalStates + ` GROUP BY state`

// Tenant implements backend.TenantBackend. It reads the settings and counts
// in one transaction, so they agree.
func (s *Store) Tenant(ctx context.Context, tenant string) (*queue.TenantInfo, error) {
	info := &queue.TenantInfo{Tenant: tenant}
	err := s.schedTx(ctx, "tenant", func(sc *sched) error {
		t, err := sc.tenant(tenant)
		if err != nil {
			return err
		}
		info.Own, info.Effective = t.own, t.eff
		if tenant == "" {
			info.Own, info.Effective = queue.TenantConfig{}, queue.TenantConfig{}
			if err := sc.readDefaults(&info.Own); err != nil {
				return err
			}
			info.Effective = queue.TenantConfig{}.Effective(info.Own)
		}
		if t.pausedUntil > sc.now {
			info.PausedUntil = fromNanos(t.pausedUntil)
		}
		rows, err := sc.rows(qTenantCounts, tenant)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var st string
			var n int64
			if err := rows.Scan(&st, &n); err != nil {
				return err
			}
			switch queue.State(st) {
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
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return info, nil
}

// readDefaults reads the tenant defaults into c.
func (sc *sched) readDefaults(c *queue.TenantConfig) error {
	var maxWait int64
	err := sc.row(`SELECT lim, weight, backlog, max_wait FROM __schema__.tenants WHERE tenant = ''`).
		Scan(&c.Limit, &c.Weight, &c.Backlog, &maxWait)
	if isNoRows(err) {
		return nil
	}
	c.MaxWait = durationOf(maxWait)
	return err
}

// SetAging implements backend.TenantBackend.
func (s *Store) SetAging(ctx context.Context, q string, step int) error {
	return s.schedTx(ctx, "set aging", func(sc *sched) error {
		return sc.exec(`INSERT INTO __schema__.queue_sched (queue, aging) VALUES ($1, $2)
			ON CONFLICT (queue) DO UPDATE SET aging = $2`, q, step)
	})
}

// Pause implements backend.TenantBackend. Pausing a tenant moves its pending
// jobs to waiting in the same step (a queue's are left pending: Lease
// skips the queue); resuming releases what there is room for.
func (s *Store) Pause(ctx context.Context, scope queue.Scope, d time.Duration) (time.Time, error) {
	var until int64
	var now int64
	err := s.schedTx(ctx, "pause", func(sc *sched) error {
		now = sc.now
		end := int64(0)
		if d > 0 {
			end = after(sc.now, d)
		}
		var err error
		switch scope.Kind {
		case queue.ScopeTenant:
			until, err = sc.pauseTenant(scope.Name, end)
		case queue.ScopeGroup:
			until, err = sc.pauseGroup(scope.Name, end)
		case queue.ScopeQueue:
			err = sc.row(`INSERT INTO __schema__.queue_sched AS s (queue, paused_until) VALUES ($1, $2)
				ON CONFLICT (queue) DO UPDATE SET paused_until = CASE WHEN $2 = 0 THEN 0 ELSE greatest(s.paused_until, $2) END
				RETURNING paused_until`, scope.Name, end).Scan(&until)
			if end == 0 {
				sc.readyQueue(scope.Name)
			}
		default:
			err = backend.InvalidArgument(queue.Field("Scope", "Kind"), "must be tenant, group or queue, got %q", scope.Kind)
		}
		return err
	})
	if err != nil || until <= now {
		return time.Time{}, err
	}
	return fromNanos(until), nil
}

func (sc *sched) pauseTenant(name string, end int64) (int64, error) {
	if err := sc.lock(kindTenant, name); err != nil {
		return 0, err
	}
	var until int64
	err := sc.row(`INSERT INTO __schema__.tenants AS t (tenant, paused_until) VALUES ($1, $2)
		ON CONFLICT (tenant) DO UPDATE SET paused_until = CASE WHEN $2 = 0 THEN 0 ELSE greatest(t.paused_until, $2) END
		RETURNING paused_until`, name, end).Scan(&until)
	if err != nil {
		return 0, err
	}
	sc.forget()
	if until <= sc.now {
		return until, sc.fillTenant(name)
	}
	if err := sc.wakeTenant(name, until); err != nil {
		return 0, err
	}
	waitEnd, err := sc.waitUntil(name)
	if err != nil {
		return 0, err
	}
	groups, err := sc.names(`UPDATE __schema__.jobs SET state = 'waiting', hold = 'tenant', wait_until = $1, updated_at = $2
		WHERE tenant = $3 AND tenant <> '' AND state = 'pending' RETURNING grp`, waitEnd, sc.now, name)
	if err != nil {
		return 0, err
	}
	// The held jobs left room in their groups.
	var gs []string
	for _, g := range groups {
		gs = addOnce(gs, g)
	}
	return until, sc.fillGroups(gs)
}

// queuePauses reads the queues paused now and until when.
func (s *Store) queuePauses(ctx context.Context) (map[string]int64, error) {
	rows, err := s.pool.Query(ctx, qualify(`SELECT queue, paused_until FROM __schema__.queue_sched WHERE paused_until > $1`, s.schema), s.now())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var q string
		var until int64
		if err := rows.Scan(&q, &until); err != nil {
			return nil, err
		}
		out[q] = until
	}
	return out, rows.Err()
}
