package queue

import "context"

// MaxSecretLen bounds a tenant's webhook secret, in bytes.
const MaxSecretLen = 256

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

// ValidateSecret returns an *InvalidArgumentError when tenant or secret
// breaks a rule: a tenant name as JobSpec.Tenant's, a secret of printable
// ASCII of at most MaxSecretLen bytes.
func ValidateSecret(tenant, secret string) error {
	if err := validName(Field("", "tenant"), tenant, true); err != nil {
		return err
	}
	if len(secret) > MaxSecretLen {
		return invalid(Field("", "secret"), "must be at most %d bytes, got %d", MaxSecretLen, len(secret))
	}
	for i := 0; i < len(secret); i++ {
		if c := secret[i]; c <= 0x20 || c > 0x7e {
			return invalid(Field("", "secret"), "must be printable ASCII without spaces")
		}
	}
	return nil
}
