package queue

import "context"

// TenantOrder is the order TenantLister.Tenants returns tenants in.
type TenantOrder string

// The orders of a tenant listing.
const (
	// TenantsByName lists tenants by name; the zero TenantOrder means it.
	TenantsByName TenantOrder = "name"
	// TenantsBusiest lists the busiest tenants first: most active jobs,
	// then most jobs waiting to start (pending plus waiting, the
	// backlog), then by name.
	TenantsBusiest TenantOrder = "busiest"
)

// TenantFilter selects a page of tenants for TenantLister.Tenants.
type TenantFilter struct {
	// Order is TenantsByName (the default) or TenantsBusiest. A cursor
	// belongs to the order it was read in.
	Order TenantOrder
	// Limit is the page size: default DefaultListLimit (100), at most
	// MaxListLimit (1000).
	Limit int
	// Cursor continues from a previous TenantPage.Next.
	Cursor string
}

// Validate returns an *InvalidArgumentError naming the first field of f
// that breaks a rule.
func (f TenantFilter) Validate() error {
	if f.Limit < 0 {
		return invalid(Field("TenantFilter", "Limit"), "must not be negative, got %d", f.Limit)
	}
	switch f.Order {
	case "", TenantsByName, TenantsBusiest:
	default:
		return invalid(Field("TenantFilter", "Order"), "must be %q or %q, got %q", TenantsByName, TenantsBusiest, f.Order)
	}
	return nil
}

// TenantPage is one page of tenants.
type TenantPage struct {
	// Tenants holds each tenant's settings and counts, as Client.Tenant
	// reports them.
	Tenants []*TenantInfo
	// Next is the cursor of the next page; empty when there is none.
	Next string
}

// TenantLister is served (Features.TenantList) by backends with
// CapTenantList: they can list every tenant that has unfinished jobs or settings of its own (the
// defaults, tenant "", are not listed), each with the same counts and
// settings as TenantBackend.Tenant, one page per call. Counts move while
// an operator pages: a tenant whose rank changes between two pages of the
// busiest order may be seen twice or not at all, as with any keyset
// paging of live data.
type TenantLister interface {
	Tenants(ctx context.Context, f TenantFilter) (*TenantPage, error)
}

// Tenants returns one page of tenants with their settings and counts,
// by name or busiest first (see TenantFilter). It returns an
// *UnsupportedError when the backend cannot list tenants.
func (c *Client) Tenants(ctx context.Context, f TenantFilter) (*TenantPage, error) {
	feat := c.b.Features()
	tl := feat.TenantList
	if tl == nil {
		return nil, feat.unsupported(CapTenantList)
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
