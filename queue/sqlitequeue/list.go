package sqlitequeue

import (
	"context"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// listQ are the listings' statements.
var listQ = &sqlstore.ListStatements{Jobs: "jobs", Tenants: qTenantList, TenantAlias: "t.", Param: sqlParam}

// List implements backend.Backend. A page is one query that walks an index
// in id order, forwards or backwards (NewestFirst), and stops at a page of
// matches: (queue, state, id) for a queue and one state, else the (queue,
// id), (tenant, id), (kind, id) and (grp, id) indexes of migration 0004
// (TestListPlans checks the plans). With one filter a page reads just its
// own rows whatever the size of the table; the other filters are checked
// on each row the walk meets, so a rare combination reads more.
func (b *Backend) List(ctx context.Context, f queue.ListFilter) (*queue.Page, error) {
	if b.closed.Load() {
		return nil, b.wrap("list", queue.ErrClosed)
	}
	query, args, limit, err := sqlstore.ListQuery(listQ, f)
	if err != nil {
		return nil, err
	}
	page, err := sqlstore.ListJobs(sqlstore.OnSQL{Ctx: ctx, Q: b.r}, query, args, limit)
	return page, b.wrap("list", err)
}
