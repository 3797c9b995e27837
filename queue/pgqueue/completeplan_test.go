package pgqueue_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/queue/pgqueue"
	"github.com/sluicehq/sluice/queue/queuetest"
)

// A batch of completions reads its jobs by id, however many finished jobs
// jobs_lease still holds dead entries of and whatever the statistics said
// when its plan was made (once per connection): read through that index,
// a batch of 5 visited 272 heap pages on a queue draining at concurrency
// 10.
func TestCompleteManyReadsByID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		analyze bool
	}{
		{"planned on an empty table", false},
		{"planned on statistics of ready jobs", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkCompleteManyPlan(t, tc.analyze)
		})
	}
}

func checkCompleteManyPlan(t *testing.T, analyze bool) {
	url := pgtest.URL(t)
	s, err := pgqueue.Open(context.Background(), url, pgqueue.Options{Schema: pgtest.Schema(t, url),
		Clock: clock.NewFake(queuetest.Epoch)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	conn, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	jobs := pgx.Identifier{s.Schema(), "jobs"}.Sanitize()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	begin, complete := pgqueue.CompleteManySQL(s)
	exec(`PREPARE complete_many(bigint[], text[], bytea[], bigint) AS ` + complete)
	defer conn.Exec(ctx, `DEALLOCATE complete_many`) //nolint:errcheck // the pool closes with the test
	explain := func(ids, tokens string) string {
		t.Helper()
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) // the completions ran: nothing of them stays
		if _, err := tx.Exec(ctx, begin); err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) EXECUTE complete_many('`+ids+`', '`+tokens+`',
			array_fill(NULL::bytea, ARRAY[cardinality('`+ids+`'::bigint[])]), 2)`)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(plan, "\n")
	}
	explain("{}", "{}") // the plan is made now, on an empty table

	// The dead entries must outlive the test's statements.
	exec(`ALTER TABLE ` + jobs + ` SET (autovacuum_enabled = false)`)
	// A full queue of ready jobs (statistics taken now, when analyze is
	// set, as the server's automatic ANALYZE takes them while jobs are
	// added); then most of the jobs run and finish, and the last ten run.
	exec(`INSERT INTO ` + jobs + ` (queue, kind, state, max_attempts, created_at, updated_at)
		SELECT 'q', 'k', 'pending', 25, 1, 1 FROM generate_series(1, 40010)`)
	if analyze {
		exec(`ANALYZE ` + jobs)
	}
	run := `UPDATE ` + jobs + ` SET state = 'active', lease_token = 'tok.' || id, lease_until = 1000 WHERE `
	exec(run + `id > 10`)
	exec(`UPDATE ` + jobs + ` SET state = 'completed', lease_token = NULL, lease_until = NULL WHERE id > 10`)
	exec(run + `id <= 10`)

	// The batch is known without reading the table: a read of the active
	// jobs through jobs_lease would clear its dead entries.
	var ids, tokens []string
	for id := 1; id <= 10; id++ {
		ids, tokens = append(ids, strconv.Itoa(id)), append(tokens, fmt.Sprintf("tok.%d", id))
	}
	p := explain("{"+strings.Join(ids, ",")+"}", "{"+strings.Join(tokens, ",")+"}")
	// 154 pages read and written by id on Postgres 15, 1,240 through
	// jobs_lease: the bound leaves room for other versions' layouts.
	if n := firstBuffers(p); n > 500 || strings.Contains(p, "jobs_lease") || strings.Contains(p, "Seq Scan") {
		t.Errorf("a batch of 10 completions touched %d pages (want at most 500, its jobs read by id):\n%s", n, p)
	}
	if !strings.Contains(p, "Update on jobs j  (cost") || !strings.Contains(p, "(actual rows=10 loops=1)") {
		t.Errorf("the batch did not complete 10 jobs:\n%s", p)
	}
}

var buffersHit = regexp.MustCompile(`Buffers: shared hit=(\d+)`)

// firstBuffers is the number of shared pages the plan's top node touched.
func firstBuffers(plan string) int {
	m := buffersHit.FindStringSubmatch(plan)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// A job holds a lease token exactly while it is active, and a deadline
// exactly while it holds a token: the completions' fence relies on it.
// The table has one CHECK constraint, compiled once per statement.
func TestJobsCheckLeaseAndState(t *testing.T) {
	t.Parallel()
	s := open(t, clock.NewFake(queuetest.Epoch))
	ctx := context.Background()
	jobs := pgx.Identifier{s.Schema(), "jobs"}.Sanitize()
	rows, err := s.Pool().Query(ctx, `SELECT conname::text FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'c' ORDER BY 1`, jobs)
	if err != nil {
		t.Fatal(err)
	}
	checks, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(checks) != "[jobs_valid]" {
		t.Errorf("CHECK constraints of jobs = %v, want [jobs_valid]", checks)
	}
	for _, tc := range []struct {
		name, state, token string
		until              any
		ok                 bool
	}{
		{"active with a lease", "active", "tok.1", int64(5), true},
		{"pending without one", "pending", "", nil, true},
		{"active without a token", "active", "", int64(5), false},
		{"pending with a token and deadline", "pending", "tok.1", int64(5), false},
		{"completed with a token only", "completed", "tok.1", nil, false},
		{"active with a token only", "active", "tok.1", nil, false},
		{"unknown state", "done", "", nil, false},
	} {
		var token any
		if tc.token != "" {
			token = tc.token
		}
		_, err := s.Pool().Exec(ctx, `INSERT INTO `+jobs+` (queue, kind, state, lease_token, lease_until, max_attempts, created_at, updated_at)
			VALUES ('q', 'k', $1, $2, $3, 25, 1, 1)`, tc.state, token, tc.until)
		var pe *pgconn.PgError
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v, want it written", tc.name, err)
		case !tc.ok && !(errors.As(err, &pe) && pe.ConstraintName == "jobs_valid"):
			t.Errorf("%s: %v, want a violation of jobs_valid", tc.name, err)
		}
	}
}
