package pgqueue

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
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

// listStatements are the listings' statements on schema.
func listStatements(schema string) *sqlstore.ListStatements {
	return &sqlstore.ListStatements{Jobs: qualify("__schema__.jobs", schema), Tenants: qualify(qTenantList, schema), Param: pgParam}
}

// Tenants implements backend.TenantLister. The counts come from the jobs
// (one pass over the unfinished jobs of tenants, by the jobs_tenant
// index) and the settings from their table, read in one snapshot with the
// defaults, so a page agrees with itself.
func (s *Store) Tenants(ctx context.Context, f queue.TenantFilter) (*queue.TenantPage, error) {
	if err := s.check("tenants"); err != nil {
		return nil, err
	}
	query, args, limit, err := sqlstore.TenantsQuery(s.lq, f)
	if err != nil {
		return nil, err
	}
	var page *queue.TenantPage
	now := s.now()
	opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	err = pgx.BeginTxFunc(ctx, s.pool, opts, func(tx pgx.Tx) error {
		sc := s.newSched(ctx, pgxDB{tx}, true) // read only: takes no lock
		var def queue.TenantConfig
		if err := sc.readDefaults(&def); err != nil {
			return err
		}
		page, err = sqlstore.ListTenants(onPgx{ctx, tx}, query, args, limit, f, def, now)
		return err
	})
	return page, s.wrap("tenants", err)
}
