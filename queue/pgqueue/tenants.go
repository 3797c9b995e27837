package pgqueue

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

var _ backend.TenantBackend = (*Store)(nil)

// SetTenant implements backend.TenantBackend (sqlstore's SetTenant).
func (s *Store) SetTenant(ctx context.Context, tenant string, cfg queue.TenantConfig) error {
	return s.schedTx(ctx, "set tenant", func(sc *sched) error { return sc.SetTenant(tenant, cfg) })
}

// Tenant implements backend.TenantBackend. It reads the settings and counts
// in one transaction, so they agree.
func (s *Store) Tenant(ctx context.Context, tenant string) (*queue.TenantInfo, error) {
	var info *queue.TenantInfo
	err := s.schedTx(ctx, "tenant", func(sc *sched) error {
		var err error
		info, err = sqlstore.ReadTenantInfo(sc.Tx, schedStmts, tenant, sc.now)
		return err
	})
	if err != nil {
		return nil, err
	}
	return info, nil
}

// durationOf reads a stored duration in nanoseconds.
func durationOf(n int64) time.Duration { return time.Duration(n) }

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
	return s.schedTx(ctx, "set aging", func(sc *sched) error { return sc.SetAging(q, step) })
}

// Pause implements backend.TenantBackend (sqlstore's Pause).
func (s *Store) Pause(ctx context.Context, scope queue.Scope, d time.Duration) (time.Time, error) {
	var until time.Time
	err := s.schedTx(ctx, "pause", func(sc *sched) error {
		var err error
		until, err = sc.Pause(scope, d)
		return err
	})
	if err != nil {
		return time.Time{}, err
	}
	return until, nil
}

// queuePauses reads the queues paused now and until when.
func (s *Store) queuePauses(ctx context.Context) (map[string]int64, error) {
	return sqlstore.QueuePauses(onPgx{ctx, s.pool}, qualify(`SELECT queue, paused_until FROM __schema__.queue_sched WHERE paused_until > $1`, s.schema), s.now())
}
