package sqlitequeue

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// TestListPlans checks that a page of every filter is read from an index
// in id order, forwards and backwards: no scan of the table and no sort of
// every match, so a page costs the same however many jobs there are.
func TestListPlans(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "plan.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		f     queue.ListFilter
		index string
	}{
		{queue.ListFilter{Tenant: "acme"}, "jobs_list_tenant"},
		{queue.ListFilter{Kind: "crawl"}, "jobs_list_kind"},
		{queue.ListFilter{Group: "g1"}, "jobs_list_group"},
		{queue.ListFilter{Tenant: "acme", Cursor: "42"}, "jobs_list_tenant"},
		{queue.ListFilter{Queue: "q"}, "jobs_list_queue"},
		{queue.ListFilter{Queue: "q", States: []queue.State{queue.StateFailed}}, "jobs_queue_state"},
	}
	for _, c := range cases {
		for _, o := range []queue.ListOrder{queue.OldestFirst, queue.NewestFirst} {
			f := c.f
			f.Order = o
			query, args, _, err := sqlstore.ListQuery(listQ, f)
			if err != nil {
				t.Fatal(err)
			}
			plan := explain(t, db, query, args)
			if !strings.Contains(plan, "INDEX "+c.index) || strings.Contains(plan, "TEMP B-TREE") {
				t.Errorf("List(%+v) plan:\n%s\nwant a read of %s in id order", f, plan, c.index)
			}
		}
	}
}

func explain(t *testing.T, db *sql.DB, query string, args []any) string {
	t.Helper()
	rows, err := db.Query("EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		out = append(out, detail)
	}
	return strings.Join(out, "\n")
}
