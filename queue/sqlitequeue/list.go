package sqlitequeue

import (
	"context"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

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
	limit := f.Limit
	if limit <= 0 {
		limit = queue.DefaultListLimit
	}
	limit = min(limit, queue.MaxListLimit)
	query, args, err := listQuery(f, limit+1)
	if err != nil {
		return nil, err
	}
	rows, err := b.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, b.wrap("list", err)
	}
	defer rows.Close()
	page := &queue.Page{}
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, b.wrap("list", err)
		}
		page.Jobs = append(page.Jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, b.wrap("list", err)
	}
	if len(page.Jobs) > limit {
		page.Jobs = page.Jobs[:limit]
		page.Next = page.Jobs[limit-1].ID
	}
	return page, nil
}

// listQuery is the query of one page of f, at most limit rows.
func listQuery(f queue.ListFilter, limit int) (string, []any, error) {
	where, args, err := listWhere(f)
	if err != nil {
		return "", nil, err
	}
	order := "id"
	if f.Order.Newest() {
		order = "id DESC"
	}
	return `SELECT ` + jobCols + ` FROM jobs WHERE ` + strings.Join(where, " AND ") +
		` ORDER BY ` + order + ` LIMIT ?`, append(args, limit), nil
}

// listWhere turns a filter into SQL conditions and their arguments. The
// cursor is the id of the last job of the previous page.
func listWhere(f queue.ListFilter) ([]string, []any, error) {
	var where []string
	var args []any
	if f.Cursor != "" {
		n, err := strconv.ParseInt(f.Cursor, 10, 64)
		if err != nil || n < 0 {
			return nil, nil, backend.InvalidArgument(queue.Field("ListFilter", "Cursor"), "is not a cursor from this backend: %q", f.Cursor)
		}
		if f.Order.Newest() {
			where = append(where, "id < ?")
		} else {
			where = append(where, "id > ?")
		}
		args = append(args, n)
	} else {
		where = append(where, "1")
	}
	// The literal != '' lets the planner use the partial indexes, which
	// leave out jobs without a tenant or group.
	eq := []struct{ cond, v string }{
		{"queue = ?", f.Queue},
		{"tenant = ? AND tenant != ''", f.Tenant},
		{"kind = ?", f.Kind},
		{"grp = ? AND grp != ''", f.Group},
	}
	for _, e := range eq {
		if e.v != "" {
			where, args = append(where, e.cond), append(args, e.v)
		}
	}
	if len(f.States) > 0 {
		where = append(where, "state IN ("+placeholders(len(f.States))+")")
		for _, s := range f.States {
			args = append(args, string(s))
		}
	}
	return where, args, nil
}
