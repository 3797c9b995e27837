package queue

import (
	"github.com/sluicehq/sluice/queue/queuetype"
)

// MaxSecretLen bounds a tenant's webhook secret, in bytes.
const MaxSecretLen = 256

// ValidateSecret returns an *InvalidArgumentError when tenant or secret
// breaks a rule: a tenant name as JobSpec.Tenant's, a secret of printable
// ASCII of at most MaxSecretLen bytes.
func ValidateSecret(tenant, secret string) error {
	if err := queuetype.ValidName(Field("", "tenant"), tenant, true); err != nil {
		return err
	}
	if len(secret) > MaxSecretLen {
		return queuetype.InvalidArgument(Field("", "secret"), "must be at most %d bytes, got %d", MaxSecretLen, len(secret))
	}
	for i := 0; i < len(secret); i++ {
		if c := secret[i]; c <= 0x20 || c > 0x7e {
			return queuetype.InvalidArgument(Field("", "secret"), "must be printable ASCII without spaces")
		}
	}
	return nil
}
