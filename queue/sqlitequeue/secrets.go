package sqlitequeue

import (
	"context"
	"database/sql"
	"errors"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

var _ backend.TenantSecrets = (*Backend)(nil)

// SetTenantSecret implements backend.TenantSecrets.
func (b *Backend) SetTenantSecret(ctx context.Context, tenant, secret string) error {
	if err := queue.ValidateSecret(tenant, secret); err != nil {
		return err
	}
	return b.write(ctx, "set tenant secret", func(tx *wtx) error {
		if secret == "" {
			_, err := tx.exec(`DELETE FROM tenant_secrets WHERE tenant = ?`, tenant)
			return err
		}
		_, err := tx.exec(`INSERT INTO tenant_secrets (tenant, secret, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (tenant) DO UPDATE SET secret = excluded.secret, updated_at = excluded.updated_at`,
			tenant, secret, b.now())
		return err
	})
}

// TenantSecret implements backend.TenantSecrets.
func (b *Backend) TenantSecret(ctx context.Context, tenant string) (string, error) {
	if b.closed.Load() {
		return "", b.wrap("tenant secret", queue.ErrClosed)
	}
	var s string
	err := b.r.QueryRowContext(ctx, `SELECT secret FROM tenant_secrets WHERE tenant = ?`, tenant).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return s, b.wrap("tenant secret", err)
}
