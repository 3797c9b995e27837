package sqlitequeue

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestCleanupPlans checks that the cleaner's deletes read indexes in the
// order they delete, with no scan of the jobs table, so a round costs the
// same however many jobs are kept.
func TestCleanupPlans(t *testing.T) {
	t.Parallel()
	db := migratedDB(t, 0)
	q := cleanQueries("")
	cases := []struct {
		query string
		want  []string
	}{
		{q[0], []string{"INDEX jobs_finished (state=? AND finished_at<?)"}},
		{q[1], []string{"INDEX job_groups_ended", "INDEX jobs_group (grp=? AND state=?)"}},
		{qOldGroups, []string{"INDEX job_groups_ended", "INDEX jobs_list_group (grp=?)"}},
	}
	for _, c := range cases {
		plan := explain(t, db, c.query, []any{"completed", 1, 10})
		if strings.Contains(plan, "SCAN jobs") || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("plan of %s:\n%s\nwant no scan of jobs and no sort", c.query, plan)
		}
		for _, w := range c.want {
			if !strings.Contains(plan, w) {
				t.Errorf("plan of %s:\n%s\nwant %s", c.query, plan, w)
			}
		}
	}
}

// migratedDB opens a new file migrated up to version upTo (0: every
// migration).
func migratedDB(t *testing.T, upTo int) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if upTo == 0 {
		if err := migrate(context.Background(), db); err != nil {
			t.Fatal(err)
		}
		return db
	}
	ms, err := migrationList()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms[:upTo] {
		if _, err := db.Exec(m.SQL); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
	}
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", upTo)); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestMigrateGroupEnds checks that groups done before the group retention
// get their end: the done time without a completion job or once it is
// gone, its finish once it finished, none while it has not; and that
// finished jobs whose group was deleted get one back, so they are cleaned.
func TestMigrateGroupEnds(t *testing.T) {
	t.Parallel()
	db := migratedDB(t, 4)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	job := func(id int, grp, state string, finished int64, unique string) {
		exec(`INSERT INTO jobs (id, queue, kind, grp, state, max_attempts, created_at, updated_at, finished_at, unique_key)
			VALUES (?, 'q', 'k', ?, ?, 1, 1, 1, ?, nullif(?, ''))`, id, grp, state, finished, unique)
	}
	group := func(id string, done int64, completion int) {
		exec(`INSERT INTO job_groups (id, created_at, done_at, completion_job) VALUES (?, 1, ?, ?)`, id, done, completion)
	}
	group("plain", 100, 0)
	group("ran", 100, 1)
	job(1, "", "completed", 300, "group:ran")
	group("running", 100, 2)
	job(2, "", "pending", 0, "group:running")
	group("gone", 100, 99)
	group("open", 0, 0)
	job(3, "deleted", "completed", 50, "")
	job(4, "deleted", "failed", 70, "")
	if err := migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"plain": 100, "ran": 300, "running": 0, "gone": 100, "open": 0, "deleted": 70}
	for id, end := range want {
		var got int64
		if err := db.QueryRow(`SELECT ended_at FROM job_groups WHERE id = ?`, id).Scan(&got); err != nil {
			t.Fatalf("group %s: %v", id, err)
		}
		if got != end {
			t.Errorf("group %s ended_at = %d, want %d", id, got, end)
		}
	}
	// The trigger ends a group when its completion job finishes.
	exec(`UPDATE jobs SET state = 'completed', finished_at = 500 WHERE id = 2`)
	var got int64
	if err := db.QueryRow(`SELECT ended_at FROM job_groups WHERE id = 'running'`).Scan(&got); err != nil || got != 500 {
		t.Errorf("running group after its completion job ended_at = %d, %v; want 500", got, err)
	}
	exec(`UPDATE jobs SET state = 'pending', finished_at = 0 WHERE id = 2`)
	if err := db.QueryRow(`SELECT ended_at FROM job_groups WHERE id = 'running'`).Scan(&got); err != nil || got != 0 {
		t.Errorf("running group after its completion job was retried: ended_at = %d, %v; want 0", got, err)
	}
}
