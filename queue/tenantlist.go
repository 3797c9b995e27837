package queue

import (
	"context"

	"github.com/sluicehq/sluice/queue/backend"
)

// Tenants returns one page of tenants with their settings and counts,
// by name or busiest first (see TenantFilter). It returns an
// *UnsupportedError when the backend cannot list tenants.
func (c *Client) Tenants(ctx context.Context, f TenantFilter) (*TenantPage, error) {
	feat := c.b.Features()
	tl := feat.TenantList
	if tl == nil {
		return nil, backend.Unsupported(feat.Name, CapTenantList)
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if f.Limit == 0 {
		f.Limit = DefaultListLimit
	}
	f.Limit = min(f.Limit, MaxListLimit)
	return tl.Tenants(ctx, f)
}
