package sqlitequeue

import (
	"context"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

var _ backend.TenantSecrets = (*Backend)(nil)

// secretQ are the statements of tenant secrets.
var secretQ = &sqlstore.SecretStatements{
	Set: `INSERT INTO tenant_secrets (tenant, secret, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (tenant) DO UPDATE SET secret = excluded.secret, updated_at = excluded.updated_at`,
	Delete: `DELETE FROM tenant_secrets WHERE tenant = ?`,
	Get:    `SELECT secret FROM tenant_secrets WHERE tenant = ?`,
}

// SetTenantSecret implements backend.TenantSecrets.
func (b *Backend) SetTenantSecret(ctx context.Context, tenant, secret string) error {
	if err := queue.ValidateSecret(tenant, secret); err != nil {
		return err
	}
	return b.write(ctx, "set tenant secret", func(tx *wtx) error {
		return sqlstore.SetTenantSecret(tx, secretQ, tenant, secret, b.now())
	})
}

// TenantSecret implements backend.TenantSecrets.
func (b *Backend) TenantSecret(ctx context.Context, tenant string) (string, error) {
	if b.closed.Load() {
		return "", b.wrap("tenant secret", queue.ErrClosed)
	}
	secret, err := sqlstore.TenantSecret(sqlstore.OnSQL{Ctx: ctx, Q: b.r}, secretQ, tenant)
	return secret, b.wrap("tenant secret", err)
}
