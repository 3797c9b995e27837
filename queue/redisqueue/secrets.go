package redisqueue

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

var _ backend.TenantSecrets = (*Backend)(nil)

// secretsKey is the hash of the tenants' webhook secrets: one key, so it
// works on a Cluster client too; each call is one command.
func (b *Backend) secretsKey() (string, error) { return b.keys.prefix.Physical("tenant_secrets") }

// SetTenantSecret implements backend.TenantSecrets.
func (b *Backend) SetTenantSecret(ctx context.Context, tenant, secret string) error {
	if err := queue.ValidateSecret(tenant, secret); err != nil {
		return err
	}
	k, err := b.secretsKey()
	if err != nil {
		return err
	}
	if secret == "" {
		err = b.client.HDel(ctx, k, tenant).Err()
	} else {
		err = b.client.HSet(ctx, k, tenant, secret).Err()
	}
	if err != nil {
		return b.fault("set tenant secret", err)
	}
	return nil
}

// TenantSecret implements backend.TenantSecrets.
func (b *Backend) TenantSecret(ctx context.Context, tenant string) (string, error) {
	k, err := b.secretsKey()
	if err != nil {
		return "", err
	}
	s, err := b.client.HGet(ctx, k, tenant).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", b.fault("tenant secret", err)
	}
	return s, nil
}
