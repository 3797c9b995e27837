package sqlstore

import (
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// ListStatements are what a dialect gives for listing jobs and tenants.
type ListStatements struct {
	// Jobs is the jobs table, as FROM names it.
	Jobs string
	// Tenants is the query of every tenant with unfinished jobs or a row
	// of settings, ending in a FROM clause a WHERE may follow. Its
	// columns: tenant, active, backlog (pending and waiting), scheduled,
	// pending, waiting, retrying, then the settings limit, weight,
	// backlog cap, max wait and paused until (0 when unset).
	Tenants string
	// TenantAlias qualifies the order keys tenant, active and backlog in
	// Tenants' WHERE and ORDER BY; empty when they need none.
	TenantAlias string
	// Param is the dialect's n-th positional parameter.
	Param func(n int) string
}

// params numbers a query's positional parameters as they are added.
type params struct {
	st   *ListStatements
	args []any
}

func (p *params) add(v any) string {
	p.args = append(p.args, v)
	return p.st.Param(len(p.args))
}

// ListQuery is the query of one page of f, with its arguments and the
// page's size: it walks ids in order, forwards or backwards
// (NewestFirst), and reads one row more than the page, to know whether
// another follows. The cursor is the id of the last job of the previous
// page.
func ListQuery(st *ListStatements, f queue.ListFilter) (string, []any, int, error) {
	limit := PageLimit(f.Limit, queue.DefaultListLimit, queue.MaxListLimit)
	p := &params{st: st}
	where := []string{"1 = 1"}
	if f.Cursor != "" {
		n, err := strconv.ParseInt(f.Cursor, 10, 64)
		if err != nil || n < 0 {
			return "", nil, 0, backend.InvalidArgument(queue.Field("ListFilter", "Cursor"), "is not a cursor from this backend: %q", f.Cursor)
		}
		op := " > "
		if f.Order.Newest() {
			op = " < "
		}
		where = append(where, "id"+op+p.add(n))
	}
	// The literal <> '' lets a planner use partial indexes, which leave
	// out jobs without a tenant or group.
	for _, e := range []struct{ col, v, extra string }{
		{"queue", f.Queue, ""}, {"tenant", f.Tenant, " AND tenant <> ''"},
		{"kind", f.Kind, ""}, {"grp", f.Group, " AND grp <> ''"},
	} {
		if e.v != "" {
			where = append(where, e.col+" = "+p.add(e.v)+e.extra)
		}
	}
	if len(f.States) > 0 {
		in := make([]string, len(f.States))
		for i, s := range f.States {
			in[i] = p.add(string(s))
		}
		where = append(where, "state IN ("+strings.Join(in, ", ")+")")
	}
	order := "id"
	if f.Order.Newest() {
		order = "id DESC"
	}
	query := `SELECT ` + JobCols("") + ` FROM ` + st.Jobs + ` WHERE ` + strings.Join(where, " AND ") +
		` ORDER BY ` + order + ` LIMIT ` + p.add(limit+1)
	return query, p.args, limit, nil
}

// ListJobs reads the page of ListQuery.
func ListJobs(tx Tx, query string, args []any, limit int) (*queue.Page, error) {
	rows, err := tx.Query(query, args...)
	jobs, err := CollectRows(rows, err, func(r Row) (*queue.Job, error) { return ScanJob(r) })
	if err != nil {
		return nil, err
	}
	page := &queue.Page{Jobs: jobs}
	if len(jobs) > limit {
		page.Jobs = jobs[:limit]
		page.Next = jobs[limit-1].ID
	}
	return page, nil
}

// TenantsQuery is the query of one page of f, with its arguments and the
// page's size (it reads one row more, as ListQuery does).
func TenantsQuery(st *ListStatements, f queue.TenantFilter) (string, []any, int, error) {
	limit := PageLimit(f.Limit, queue.DefaultListLimit, queue.MaxListLimit)
	busiest := f.Order == queue.TenantsBusiest
	cur, ok, err := backend.ParseTenantCursor(f.Cursor, busiest)
	if err != nil {
		return "", nil, 0, err
	}
	a := st.TenantAlias
	p := &params{st: st}
	where := ""
	switch {
	case ok && !busiest:
		where = " WHERE " + a + "tenant > " + p.add(cur.Tenant)
	case ok:
		act, back, name := p.add(cur.Active), p.add(cur.Backlog), p.add(cur.Tenant)
		where = " WHERE (" + a + "active < " + act + " OR (" + a + "active = " + act + " AND (" + a + "backlog < " + back +
			" OR (" + a + "backlog = " + back + " AND " + a + "tenant > " + name + "))))"
	}
	order := " ORDER BY " + a + "tenant"
	if busiest {
		order = " ORDER BY " + a + "active DESC, " + a + "backlog DESC, " + a + "tenant"
	}
	return st.Tenants + where + order + " LIMIT " + p.add(limit+1), p.args, limit, nil
}

// ListTenants reads the page of TenantsQuery, with the tenants' settings
// made effective over def; tx is the transaction def was read in, so a
// page agrees with itself.
func ListTenants(tx Tx, query string, args []any, limit int, f queue.TenantFilter, def queue.TenantConfig, now int64) (*queue.TenantPage, error) {
	rows, err := tx.Query(query, args...)
	ts, err := CollectRows(rows, err, func(r Row) (*queue.TenantInfo, error) {
		info := &queue.TenantInfo{}
		var backlog, maxWait, paused int64
		err := r.Scan(&info.Tenant, &info.Active, &backlog, &info.Scheduled, &info.Pending, &info.Waiting, &info.Retrying,
			&info.Own.Limit, &info.Own.Weight, &info.Own.Backlog, &maxWait, &paused)
		if err != nil {
			return nil, err
		}
		info.Own.MaxWait = time.Duration(maxWait)
		info.Effective = info.Own.Effective(def)
		if paused > now {
			info.PausedUntil = FromNanos(paused)
		}
		return info, nil
	})
	if err != nil {
		return nil, err
	}
	page := &queue.TenantPage{Tenants: ts}
	if len(ts) > limit {
		page.Tenants = ts[:limit]
		page.Next = backend.NextTenantCursor(ts[limit-1], f.Order == queue.TenantsBusiest)
	}
	return page, nil
}
