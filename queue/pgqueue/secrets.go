package pgqueue

import (
	"context"

	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

var _ backend.TenantSecrets = (*Store)(nil)

// secretStatements are the statements of tenant secrets on schema.
func secretStatements(schema string) *sqlstore.SecretStatements {
	return &sqlstore.SecretStatements{
		Set: qualify(`INSERT INTO __schema__.tenant_secrets (tenant, secret, updated_at) VALUES ($1, $2, $3)
			ON CONFLICT (tenant) DO UPDATE SET secret = excluded.secret, updated_at = excluded.updated_at`, schema),
		Delete: qualify(`DELETE FROM __schema__.tenant_secrets WHERE tenant = $1`, schema),
		Get:    qualify(`SELECT secret FROM __schema__.tenant_secrets WHERE tenant = $1`, schema),
	}
}

// SetTenantSecret implements backend.TenantSecrets.
func (s *Store) SetTenantSecret(ctx context.Context, tenant, secret string) error {
	if err := s.check("set tenant secret"); err != nil {
		return err
	}
	return s.wrap("set tenant secret", sqlstore.SetTenantSecret(onPgx{ctx, s.pool}, s.tq, tenant, secret, s.now()))
}

// TenantSecret implements backend.TenantSecrets.
func (s *Store) TenantSecret(ctx context.Context, tenant string) (string, error) {
	if err := s.check("tenant secret"); err != nil {
		return "", err
	}
	secret, err := sqlstore.TenantSecret(onPgx{ctx, s.pool}, s.tq, tenant)
	return secret, s.wrap("tenant secret", err)
}
