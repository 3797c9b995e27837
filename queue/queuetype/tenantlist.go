package queuetype

// TenantOrder is the order backend.TenantLister.Tenants returns tenants in.
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

// TenantFilter selects a page of tenants for backend.TenantLister.Tenants.
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
		return InvalidArgument(Field("TenantFilter", "Limit"), "must not be negative, got %d", f.Limit)
	}
	switch f.Order {
	case "", TenantsByName, TenantsBusiest:
	default:
		return InvalidArgument(Field("TenantFilter", "Order"), "must be %q or %q, got %q", TenantsByName, TenantsBusiest, f.Order)
	}
	return nil
}

// TenantPage is one page of tenants.
type TenantPage struct {
	// Tenants holds each tenant's settings and counts, as queue.Client.Tenant
	// reports them.
	Tenants []*TenantInfo
	// Next is the cursor of the next page; empty when there is none.
	Next string
}
