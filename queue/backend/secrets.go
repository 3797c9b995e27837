package backend

import "context"

// TenantSecrets keeps each tenant's webhook signing secret
// (Features.TenantSecrets): a Webhook given with a job or group of the
// tenant is signed with it, instead of the dispatcher's default secret.
// Secrets are written and read whole, never listed.
type TenantSecrets interface {
	// SetTenantSecret sets tenant's secret; "" removes it.
	SetTenantSecret(ctx context.Context, tenant, secret string) error
	// TenantSecret returns tenant's secret, or "" when it has none.
	TenantSecret(ctx context.Context, tenant string) (string, error)
}
