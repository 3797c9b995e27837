package sqlitequeue

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// TestDuePlans checks that a Lease finds its queues' due jobs through the
// per-queue due index: one lookup, however many jobs other queues hold.
func TestDuePlans(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "plan.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{schedStmts.MaintainDue, schedStmts.QueueDue, schedStmts.Due, qPromotePlain} {
		rows, err := db.Query("EXPLAIN QUERY PLAN "+q, int64(1), int64(2), "q")
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		got := strings.Join(plan, "; ")
		if !strings.Contains(got, "jobs_due_queue") {
			t.Errorf("plan of %q does not use jobs_due_queue:\n%s", q, got)
		}
	}
}
