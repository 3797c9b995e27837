package pgqueue

import (
	"context"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

var _ backend.TenantSecrets = (*Store)(nil)

// SetTenantSecret implements backend.TenantSecrets.
func (s *Store) SetTenantSecret(ctx context.Context, tenant, secret string) error {
	if err := queue.ValidateSecret(tenant, secret); err != nil {
		return err
	}
	if err := s.check("set tenant secret"); err != nil {
		return err
	}
	var err error
	if secret == "" {
		_, err = s.pool.Exec(ctx, qualify(`DELETE FROM __schema__.tenant_secrets WHERE tenant = $1`, s.schema), tenant)
	} else {
		_, err = s.pool.Exec(ctx, qualify(`INSERT INTO __schema__.tenant_secrets (tenant, secret, updated_at) VALUES ($1, $2, $3)
			ON CONFLICT (tenant) DO UPDATE SET secret = excluded.secret, updated_at = excluded.updated_at`, s.schema),
			tenant, secret, s.now())
	}
	return s.wrap("set tenant secret", err)
}

// TenantSecret implements backend.TenantSecrets.
func (s *Store) TenantSecret(ctx context.Context, tenant string) (string, error) {
	if err := s.check("tenant secret"); err != nil {
		return "", err
	}
	var secret string
	err := s.pool.QueryRow(ctx, qualify(`SELECT secret FROM __schema__.tenant_secrets WHERE tenant = $1`, s.schema), tenant).Scan(&secret)
	if isNoRows(err) {
		return "", nil
	}
	return secret, s.wrap("tenant secret", err)
}
