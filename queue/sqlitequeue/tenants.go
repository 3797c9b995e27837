package sqlitequeue

import (
	"context"
	"database/sql"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

var _ backend.TenantBackend = (*Backend)(nil)

// SetTenant implements backend.TenantBackend (sqlstore's SetTenant).
func (b *Backend) SetTenant(ctx context.Context, tenant string, cfg queue.TenantConfig) error {
	return b.writeSched(ctx, "set tenant", func(s *sched) error { return s.SetTenant(tenant, cfg) })
}

// Tenant implements backend.TenantBackend. It reads the settings and counts
// in one read transaction, so they agree.
func (b *Backend) Tenant(ctx context.Context, tenant string) (*queue.TenantInfo, error) {
	if b.closed.Load() {
		return nil, b.wrap("tenant", queue.ErrClosed)
	}
	var info *queue.TenantInfo
	err := b.read(ctx, func(tx *sql.Tx) error {
		var err error
		info, err = sqlstore.ReadTenantInfo(readTx{ctx, tx}, schedStmts, tenant, b.now())
		return err
	})
	if err != nil {
		return nil, b.wrap("tenant", err)
	}
	return info, nil
}

// SetAging implements backend.TenantBackend.
func (b *Backend) SetAging(ctx context.Context, q string, step int) error {
	return b.writeSched(ctx, "set aging", func(s *sched) error { return s.SetAging(q, step) })
}

// Pause implements backend.TenantBackend (sqlstore's Pause).
func (b *Backend) Pause(ctx context.Context, scope queue.Scope, d time.Duration) (time.Time, error) {
	var until time.Time
	err := b.writeSched(ctx, "pause", func(s *sched) error {
		var err error
		until, err = s.Pause(scope, d)
		return err
	})
	if err != nil {
		return time.Time{}, err
	}
	return until, nil
}
