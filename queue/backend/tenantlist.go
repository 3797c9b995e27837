package backend

import (
	"context"

	"github.com/sluicehq/sluice/queue/queuetype"
)

// TenantLister is served (Features.TenantList) by backends with
// CapTenantList: they can list every tenant that has unfinished jobs or settings of its own (the
// defaults, tenant "", are not listed), each with the same counts and
// settings as TenantBackend.Tenant, one page per call. Counts move while
// an operator pages: a tenant whose rank changes between two pages of the
// busiest order may be seen twice or not at all, as with any keyset
// paging of live data.
type TenantLister interface {
	Tenants(ctx context.Context, f queuetype.TenantFilter) (*queuetype.TenantPage, error)
}
