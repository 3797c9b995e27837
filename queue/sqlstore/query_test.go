package sqlstore

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// TestQueryParams checks that the listings number their parameters as
// their arguments go, in both parameter styles: each argument is
// referred to, and no reference names a missing one.
func TestQueryParams(t *testing.T) {
	styles := map[string]func(int) string{
		"$": func(n int) string { return "$" + strconv.Itoa(n) },
		"?": func(n int) string { return "?" + strconv.Itoa(n) },
	}
	ref := regexp.MustCompile(`[$?](\d+)`)
	check := func(t *testing.T, query string, args []any) {
		t.Helper()
		seen := map[int]bool{}
		for _, m := range ref.FindAllStringSubmatch(query, -1) {
			n, _ := strconv.Atoi(m[1])
			if n < 1 || n > len(args) {
				t.Fatalf("%s: parameter %d of %d arguments", query, n, len(args))
			}
			seen[n] = true
		}
		if len(seen) != len(args) {
			t.Fatalf("%s: %d of %d arguments referred to", query, len(seen), len(args))
		}
	}
	for name, param := range styles {
		t.Run(name, func(t *testing.T) {
			st := &ListStatements{Jobs: "jobs", Tenants: "SELECT * FROM t", TenantAlias: "t.", Param: param}
			for _, f := range []queue.ListFilter{
				{},
				{Queue: "q", Tenant: "a", Kind: "k", Group: "g", Cursor: "7", Order: queue.NewestFirst,
					States: []queue.State{queue.StatePending, queue.StateFailed}},
			} {
				q, args, limit, err := ListQuery(st, f)
				if err != nil || limit != queue.DefaultListLimit {
					t.Fatalf("ListQuery(%+v): limit %d, %v", f, limit, err)
				}
				check(t, q, args)
			}
			for _, order := range []queue.TenantOrder{queue.TenantsByName, queue.TenantsBusiest} {
				busiest := order == queue.TenantsBusiest
				cur := backend.NextTenantCursor(&queue.TenantInfo{Tenant: "a", Active: 2}, busiest)
				f := queue.TenantFilter{Order: order, Limit: 1, Cursor: cur}
				q, args, _, err := TenantsQuery(st, f)
				if err != nil {
					t.Fatal(err)
				}
				check(t, q, args)
			}
			ob := &OutboxStatements{Deliveries: "deliveries", Param: param}
			q, args, _, err := DeliveriesQuery(ob, backend.DeliveryFilter{JobID: "1", Subscription: "s", Cursor: "9"})
			if err != nil {
				t.Fatal(err)
			}
			check(t, q, args)
			if _, _, _, err := ListQuery(st, queue.ListFilter{Cursor: "x"}); err == nil {
				t.Fatal("ListQuery took a cursor that is no id")
			}
		})
	}
}
