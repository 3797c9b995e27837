package pgqueue_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/pgqueue"
	"github.com/sluicehq/sluice/queue/queuetest"
)

// A lease reads the first ready jobs from their ordered index even when
// the table's statistics say it is empty, as they do for a queue analysed
// while new or drained: the planner must not read every ready job and
// sort them to take a few (with 40,000 ready, 23 ms a lease instead of
// 0.1 ms). A lease of several queues reads each queue's first jobs only.
func TestLeaseReadsInOrderWithStaleStatistics(t *testing.T) {
	t.Parallel()
	s := open(t, clock.NewFake(queuetest.Epoch))
	ctx := context.Background()
	jobs := pgx.Identifier{s.Schema(), "jobs"}.Sanitize()
	if _, err := s.Pool().Exec(ctx, "ANALYZE "+jobs); err != nil {
		t.Fatal(err)
	}
	// Ready jobs written as the store writes them (the plan is what is
	// tested, so the rows need only the columns it reads).
	fill := func(q string, from, to int) {
		t.Helper()
		_, err := s.Pool().Exec(ctx, `INSERT INTO `+jobs+`
			(queue, kind, state, band, vrank, vstart, vfinish, max_attempts, created_at, updated_at)
			SELECT $1, 'k', 'pending', g % 3, g, g, g + 1, 25, 1, 1 FROM generate_series($2::int, $3::int) g`, q, from, to)
		if err != nil {
			t.Fatal(err)
		}
	}
	begin, lease := pgqueue.LeaseSQL(s)
	// The plan is made by PREPARE, so that the lease's settings make it
	// the generic plan the store keeps, which cannot know the LIMIT.
	plan := func(begin, stmt, queues string) string {
		tx, err := s.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) // the lease ran: nothing of it stays
		if begin != "" {
			if _, err := tx.Exec(ctx, begin); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tx.Exec(ctx, "PREPARE lease_plan AS "+stmt); err != nil {
			t.Fatal(err)
		}
		defer tx.Exec(ctx, "DEALLOCATE lease_plan") // a session's, not the transaction's
		rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, TIMING OFF) EXECUTE lease_plan('"+queues+"', 10, 'tok', 2, 'w', 1)")
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	check := func(name, stmt, queues string) {
		t.Helper()
		if p := plan("", stmt, queues); mostRead(p) <= 20 {
			t.Logf("%s: this server's planner reads in order even without the settings", name)
		}
		p := plan(begin, stmt, queues)
		if n := mostRead(p); n > 20 || !strings.Contains(p, "jobs_ready") {
			t.Errorf("%s: a scan of the lease read %d rows for 10 jobs (want at most 10 a queue, from jobs_ready):\n%s", name, n, p)
		}
		if !strings.Contains(p, "Update on jobs j  (cost") || !strings.Contains(p, "(actual rows=10 loops=1)") {
			t.Errorf("%s: the lease did not take 10 jobs:\n%s", name, p)
		}
	}
	quickOne, quickMany := pgqueue.QuickLeaseSQL(s)
	fill("q", 1, 40000)
	check("one queue", lease, "q")
	check("one queue, quick", quickOne, "q")
	fill("r", 40001, 50000)
	check("two queues", pgqueue.LeaseManySQL(s), "{q,r}")
	check("two queues, quick", quickMany, "{q,r}")
	// On fresh statistics of a big table, the planner, which cannot know
	// how many jobs LIMIT $2 keeps, updated the picked jobs by hashing
	// every job of the table: each lease read them all.
	if _, err := s.Pool().Exec(ctx, "ANALYZE "+jobs); err != nil {
		t.Fatal(err)
	}
	check("one queue, fresh statistics", lease, "q")
	check("one queue, quick, fresh statistics", quickOne, "q")
	check("two queues, fresh statistics", pgqueue.LeaseManySQL(s), "{q,r}")
	check("two queues, quick, fresh statistics", quickMany, "{q,r}")
}

var scanRows = regexp.MustCompile(`Scan.* rows=(\d+) loops`)

// mostRead is the most rows any scan of plan returned, per loop.
func mostRead(plan string) int {
	most := 0
	for _, m := range scanRows.FindAllStringSubmatch(plan, -1) {
		n, _ := strconv.Atoi(m[1])
		most = max(most, n)
	}
	return most
}

// The lease's statements keep one plan per connection (generic plans),
// made on their first run: a plan made while the table is empty must
// still read the first ready jobs in order once it holds 40,000.
func TestLeasePlannedOnEmptyTableReadsInOrder(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	// One connection, so the plans checked are the ones the leases made.
	s, err := pgqueue.Open(context.Background(), url, pgqueue.Options{Schema: pgtest.Schema(t, url), MaxConns: 1,
		Clock: clock.NewFake(queuetest.Epoch)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	for _, qs := range [][]string{{"q"}, {"q", "r"}} {
		req := backend.LeaseRequest{Queues: qs, Max: 10, WorkerID: "w", LeaseFor: time.Minute}
		if ls, err := s.Lease(ctx, req); err != nil || len(ls) != 0 {
			t.Fatalf("Lease(%v) on an empty table = %v, %v", qs, ls, err)
		}
	}
	jobs := pgx.Identifier{s.Schema(), "jobs"}.Sanitize()
	_, err = s.Pool().Exec(ctx, `INSERT INTO `+jobs+`
		(queue, kind, state, band, vrank, vstart, vfinish, max_attempts, created_at, updated_at)
		SELECT CASE WHEN g > 30000 THEN 'r' ELSE 'q' END, 'k', 'pending', g % 3, g, g, g + 1, 25, 1, 1
		FROM generate_series(1, 40000) g`)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// The statements of a lease of one queue take its name, those of
	// several an array.
	rows, err := conn.Query(ctx, `SELECT name, CASE WHEN parameter_types[1] = 'text[]'::regtype THEN '{q,r}' ELSE 'q' END
		FROM pg_prepared_statements
		WHERE statement LIKE '%WITH picked%' AND generic_plans > 0 AND statement NOT LIKE '%pg_prepared_statements%'`)
	if err != nil {
		t.Fatal(err)
	}
	type prepared struct{ Name, Queues string }
	kept, err := pgx.CollectRows(rows, pgx.RowToStructByPos[prepared])
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 4 {
		t.Fatalf("%d lease statements with a generic plan on the connection, want 4 (the quick lease and the full one, of one queue and of two)", len(kept))
	}
	begin, _ := pgqueue.LeaseSQL(s)
	for _, k := range kept {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, begin); err != nil {
			t.Fatal(err)
		}
		r, err := tx.Query(ctx, "EXPLAIN (ANALYZE, TIMING OFF) EXECUTE "+pgx.Identifier{k.Name}.Sanitize()+"('"+k.Queues+"', 10, 'tok', 2, 'w', 1)")
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(r, pgx.RowTo[string])
		_ = tx.Rollback(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p := strings.Join(lines, "\n")
		if n := mostRead(p); n > 20 || !strings.Contains(p, "jobs_ready") || !strings.Contains(p, "(actual rows=10 loops=1)") {
			t.Errorf("a lease of %s planned on the empty table read %d rows for 10 jobs (want at most 10 a queue, from jobs_ready):\n%s", k.Queues, n, p)
		}
	}
}
