package pgqueue

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

var _ backend.TenantLister = (*Store)(nil)

// qTenantList is every tenant with unfinished jobs or a row of settings,
// with its counts and settings. Its first columns are the order keys:
// name, active, backlog. Names compare byte by byte (COLLATE "C"), as in
// the other stores, whatever the database's collation.
const qTenantList = `WITH c AS (
		SELECT tenant,
			count(*) FILTER (WHERE state = 'active') AS active,
			count(*) FILTER (WHERE state IN ('pending', 'waiting')) AS backlog,
			count(*) FILTER (WHERE state = 'scheduled') AS scheduled,
			count(*) FILTER (WHERE state = 'pending') AS pending,
			count(*) FILTER (WHERE state = 'waiting') AS waiting,
			count(*) FILTER (WHERE state = 'retrying') AS retrying
		FROM __schema__.jobs WHERE tenant <> '' AND state NOT IN ` + finalStates + ` GROUP BY tenant
	), t AS (
		SELECT coalesce(c.tenant, s.tenant) COLLATE "C" AS tenant,
			coalesce(c.active, 0) AS active, coalesce(c.backlog, 0) AS backlog,
			coalesce(c.scheduled, 0) AS scheduled, coalesce(c.pending, 0) AS pending,
			coalesce(c.waiting, 0) AS waiting, coalesce(c.retrying, 0) AS retrying,
			coalesce(s.lim, 0) AS lim, coalesce(s.weight, 0) AS weight, coalesce(s.backlog, 0) AS cap,
			coalesce(s.max_wait, 0) AS max_wait, coalesce(s.paused_until, 0) AS paused_until
		FROM c FULL JOIN (SELECT * FROM __schema__.tenants WHERE tenant <> '') s ON s.tenant = c.tenant
	)
	SELECT tenant, active, backlog, scheduled, pending, waiting, retrying, lim, weight, cap, max_wait, paused_until
	FROM t`

// Tenants implements backend.TenantLister. The counts come from the jobs
// (one pass over the unfinished jobs of tenants, by the jobs_tenant
// index) and the settings from their table, read in one snapshot with the
// defaults, so a page agrees with itself.
func (s *Store) Tenants(ctx context.Context, f queue.TenantFilter) (*queue.TenantPage, error) {
	if err := s.check("tenants"); err != nil {
		return nil, err
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
	order := " ORDER BY tenant"
	if busiest {
		order = " ORDER BY active DESC, backlog DESC, tenant"
	}
	args = append(args, limit+1)
	query := qualify(qTenantList+where+order+" LIMIT $"+strconv.Itoa(len(args)), s.schema)
	page := &queue.TenantPage{}
	now := s.now()
	opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	err = pgx.BeginTxFunc(ctx, s.pool, opts, func(tx pgx.Tx) error {
		sc := s.newSched(ctx, pgxDB{tx}, true) // read only: takes no lock
		var def queue.TenantConfig
		if err := sc.readDefaults(&def); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		page.Tenants, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*queue.TenantInfo, error) {
			return scanTenant(r, def, now)
		})
		return err
	})
	if err != nil {
		return nil, s.wrap("tenants", err)
	}
	if len(page.Tenants) > limit {
		page.Tenants = page.Tenants[:limit]
		page.Next = backend.NextTenantCursor(page.Tenants[limit-1], busiest)
	}
	return page, nil
}

// scanTenant reads a row of qTenantList.
func scanTenant(r scanner, def queue.TenantConfig, now int64) (*queue.TenantInfo, error) {
	info := &queue.TenantInfo{}
	var backlog, maxWait, paused int64
	err := r.Scan(&info.Tenant, &info.Active, &backlog, &info.Scheduled, &info.Pending, &info.Waiting, &info.Retrying,
		&info.Own.Limit, &info.Own.Weight, &info.Own.Backlog, &maxWait, &paused)
	if err != nil {
		return nil, err
	}
	info.Own.MaxWait = durationOf(maxWait)
	info.Effective = info.Own.Effective(def)
	if paused > now {
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
		return " WHERE tenant > $1", []any{cur.Tenant}, nil
	}
	return " WHERE (active < $1 OR (active = $1 AND (backlog < $2 OR (backlog = $2 AND tenant > $3))))",
		[]any{cur.Active, cur.Backlog, cur.Tenant}, nil
}
