package mux

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

var _ backend.TenantSecrets = (*Backend)(nil)

// The tenants' webhook secrets live with the outbox on the default
// backend: the dispatcher that signs the per-job webhooks reads the
// events there, so it reads the secrets there too.

// secrets returns the default backend's secrets part, or an error naming
// it when it keeps none (the router's Features then leave the part out).
func (m *Backend) secrets() (backend.TenantSecrets, error) {
	def := m.Default().Features()
	if def.TenantSecrets == nil {
		return nil, fmt.Errorf("mux: the default backend (%s) keeps no tenant webhook secrets: %w", def.Name, queue.ErrUnsupported)
	}
	return def.TenantSecrets, nil
}

// SetTenantSecret forwards to the default backend.
func (m *Backend) SetTenantSecret(ctx context.Context, tenant, secret string) error {
	ts, err := m.secrets()
	if err != nil {
		return err
	}
	return ts.SetTenantSecret(ctx, tenant, secret)
}

// TenantSecret forwards to the default backend.
func (m *Backend) TenantSecret(ctx context.Context, tenant string) (string, error) {
	ts, err := m.secrets()
	if err != nil {
		return "", err
	}
	return ts.TenantSecret(ctx, tenant)
}
