package sqlitequeue

import (
	"context"
	"database/sql"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

var _ backend.TenantLister = (*Backend)(nil)

// qTenantList is every tenant with unfinished jobs (scope_counts) or a
// row of settings, with its counts and settings. Its columns are the
// order keys first: name, active, backlog.
const qTenantList = `WITH names AS (
		SELECT name AS tenant FROM scope_counts WHERE kind = 't' AND n > 0
		UNION SELECT tenant FROM tenants WHERE tenant != ''
	), t AS (
		SELECT names.tenant,
			coalesce(sum(CASE WHEN c.state = 'active' THEN c.n END), 0) AS active,
			coalesce(sum(CASE WHEN c.state IN ('pending', 'waiting') THEN c.n END), 0) AS backlog,
			coalesce(sum(CASE WHEN c.state = 'scheduled' THEN c.n END), 0) AS scheduled,
			coalesce(sum(CASE WHEN c.state = 'pending' THEN c.n END), 0) AS pending,
			coalesce(sum(CASE WHEN c.state = 'waiting' THEN c.n END), 0) AS waiting,
			coalesce(sum(CASE WHEN c.state = 'retrying' THEN c.n END), 0) AS retrying
		FROM names LEFT JOIN scope_counts c ON c.kind = 't' AND c.name = names.tenant
		GROUP BY names.tenant
	)
	SELECT t.tenant, t.active, t.backlog, t.scheduled, t.pending, t.waiting, t.retrying,
		coalesce(s.lim, 0), coalesce(s.weight, 0), coalesce(s.backlog, 0), coalesce(s.max_wait, 0),
		coalesce(s.paused_until, 0)
	FROM t LEFT JOIN tenants s ON s.tenant = t.tenant`

// Tenants implements backend.TenantLister. Tenants come from the per-tenant
// counts the job triggers keep and from the settings table, never from
// the jobs themselves; the busiest order sorts every tenant, which is
// cheap next to the jobs (one row per tenant and state).
func (b *Backend) Tenants(ctx context.Context, f queue.TenantFilter) (*queue.TenantPage, error) {
	if b.closed.Load() {
		return nil, b.wrap("tenants", queue.ErrClosed)
	}
	query, args, limit, err := sqlstore.TenantsQuery(listQ, f)
	if err != nil {
		return nil, err
	}
	var page *queue.TenantPage
	now := b.now()
	err = b.read(ctx, func(tx *sql.Tx) error {
		def, err := readDefaults(tx.QueryRowContext(ctx, qDefaults))
		if err != nil {
			return err
		}
		page, err = sqlstore.ListTenants(sqlstore.OnSQL{Ctx: ctx, Q: tx}, query, args, limit, f, def, now)
		return err
	})
	return page, b.wrap("tenants", err)
}
