package sqlitequeue

import (
	"context"
	"database/sql"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
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
	limit := f.Limit
	if limit <= 0 {
		limit = queue.DefaultListLimit
	}
	limit = min(limit, queue.MaxListLimit)
	busiest := f.Order == queue.TenantsBusiest
	where, args, err := tenantCursor(f.Cursor, busiest)
	if err != nil {
		return nil, err
	}
	order := " ORDER BY t.tenant"
	if busiest {
		order = " ORDER BY t.active DESC, t.backlog DESC, t.tenant"
	}
	page := &queue.TenantPage{}
	var last *queue.TenantInfo
	err = b.read(ctx, func(tx *sql.Tx) error {
		def, err := readDefaults(tx.QueryRowContext(ctx, qDefaults))
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, qTenantList+where+order+" LIMIT ?", append(args, limit+1)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			info, err := b.scanTenant(rows, def)
			if err != nil {
				return err
			}
			page.Tenants = append(page.Tenants, info)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, b.wrap("tenants", err)
	}
	if len(page.Tenants) > limit {
		page.Tenants = page.Tenants[:limit]
		last = page.Tenants[limit-1]
		page.Next = backend.NextTenantCursor(last, busiest)
	}
	return page, nil
}

func (b *Backend) scanTenant(rows *sql.Rows, def queue.TenantConfig) (*queue.TenantInfo, error) {
	info := &queue.TenantInfo{}
	var backlog, maxWait, paused int64
	err := rows.Scan(&info.Tenant, &info.Active, &backlog, &info.Scheduled, &info.Pending, &info.Waiting, &info.Retrying,
		&info.Own.Limit, &info.Own.Weight, &info.Own.Backlog, &maxWait, &paused)
	if err != nil {
		return nil, err
	}
	info.Own.MaxWait = durationOf(maxWait)
	info.Effective = info.Own.Effective(def)
	if paused > b.now() {
		info.PausedUntil = fromNanos(paused)
	}
	return info, nil
}

// tenantCursor turns a cursor into the condition that selects the rows
// after it in the listing's order, with its arguments.
func tenantCursor(c string, busiest bool) (string, []any, error) {
	cur, ok, err := backend.ParseTenantCursor(c, busiest)
	switch {
	case err != nil || !ok:
		return "", nil, err
	case !busiest:
		return " WHERE t.tenant > ?", []any{cur.Tenant}, nil
	}
	return " WHERE (t.active < ?1 OR (t.active = ?1 AND (t.backlog < ?2 OR (t.backlog = ?2 AND t.tenant > ?3))))",
		[]any{cur.Active, cur.Backlog, cur.Tenant}, nil
}
