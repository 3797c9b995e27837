package pgqueue

import (
	"context"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// List implements backend.Backend: one query walking ids in order, forwards
// or backwards (NewestFirst), stopping at a page of matches. A queue and
// state filter walks jobs_queue_state; the others walk the primary key
// and check each row.
func (s *Store) List(ctx context.Context, f queue.ListFilter) (*queue.Page, error) {
	if err := s.check("list"); err != nil {
		return nil, err
	}
	limit := f.Limit
	if limit <= 0 {
		limit = queue.DefaultListLimit
	}
	limit = min(limit, queue.MaxListLimit)
	query, args, err := s.listQuery(f, limit+1)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, s.wrap("list", err)
	}
	defer rows.Close()
	page := &queue.Page{}
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, s.wrap("list", err)
		}
		page.Jobs = append(page.Jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("list", err)
	}
	if len(page.Jobs) > limit {
		page.Jobs = page.Jobs[:limit]
		page.Next = page.Jobs[limit-1].ID
	}
	return page, nil
}

// listQuery is the query of one page of f, at most limit rows. The cursor
// is the id of the last job of the previous page.
func (s *Store) listQuery(f queue.ListFilter, limit int) (string, []any, error) {
	where := []string{"true"}
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.Cursor != "" {
		n, err := strconv.ParseInt(f.Cursor, 10, 64)
		if err != nil || n < 0 {
			return "", nil, backend.InvalidArgument(queue.Field("ListFilter", "Cursor"), "is not a cursor from this backend: %q", f.Cursor)
		}
		op := " > "
		if f.Order.Newest() {
			op = " < "
		}
		where = append(where, "id"+op+arg(n))
	}
	for _, e := range []struct{ col, v string }{{"queue", f.Queue}, {"tenant", f.Tenant}, {"kind", f.Kind}, {"grp", f.Group}} {
		if e.v != "" {
			where = append(where, e.col+" = "+arg(e.v))
		}
	}
	if len(f.States) > 0 {
		states := make([]string, len(f.States))
		for i, st := range f.States {
			states[i] = string(st)
		}
		where = append(where, "state = ANY("+arg(states)+"::text[])")
	}
	order := "id"
	if f.Order.Newest() {
		order = "id DESC"
	}
	query := qualify(`SELECT `+jobCols("")+` FROM __schema__.jobs WHERE `+strings.Join(where, " AND ")+
		` ORDER BY `+order+` LIMIT `+arg(limit), s.schema)
	return query, args, nil
}
