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
	"github.com/sluicehq/sluice/queue/pgqueue"
	"github.com/sluicehq/sluice/queue/queuetest"
)

// A batch of completions reads its jobs by id, however many finished jobs
// jobs_lease still holds dead entries of and whatever the statistics say
// about active jobs: read through that index, a batch of 5 visited 272
// heap pages on a queue draining at concurrency 10.
func TestCompleteManyReadsByID(t *testing.T) {
	t.Parallel()
	s := open(t, clock.NewFake(queuetest.Epoch))
	ctx := context.Background()
	jobs := pgx.Identifier{s.Schema(), "jobs"}.Sanitize()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := s.Pool().Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	// The dead entries must outlive the test's statements.
	exec(`ALTER TABLE ` + jobs + ` SET (autovacuum_enabled = false)`)
	// Statistics taken on a full queue of ready jobs, as the server's
	// automatic ANALYZE takes them while jobs are being added; then most
	// of the jobs run and finish, and the last ten run.
	exec(`INSERT INTO ` + jobs + ` (queue, kind, state, max_attempts, created_at, updated_at)
		SELECT 'q', 'k', 'pending', 25, 1, 1 FROM generate_series(1, 40010)`)
	exec(`ANALYZE ` + jobs)
	run := `UPDATE ` + jobs + ` SET state = 'active', lease_token = 'tok.' || id, lease_until = 1000 WHERE `
	exec(run + `id > 10`)
	exec(`UPDATE ` + jobs + ` SET state = 'completed', lease_token = NULL, lease_until = NULL WHERE id > 10`)
	exec(run + `id <= 10`)

	// The batch is known without reading the table: a read of the active
	// jobs through jobs_lease would clear its dead entries.
	var ids []int64
	var tokens []string
	for id := range int64(10) {
		ids, tokens = append(ids, id+1), append(tokens, fmt.Sprintf("tok.%d", id+1))
	}
	results := make([][]byte, len(ids))

	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) // the completions ran: nothing of them stays
	lines, err := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) "+pgqueue.CompleteManySQL(s), ids, tokens, results, int64(2))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pgx.CollectRows(lines, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	p := strings.Join(plan, "\n")
	// 154 pages read and written by id on Postgres 15, 1,240 through
	// jobs_lease: the bound leaves room for other versions' layouts.
	if n := firstBuffers(p); n > 500 || strings.Contains(p, "jobs_lease") {
		t.Errorf("a batch of 10 completions touched %d pages (want at most 500, its jobs read by id):\n%s", n, p)
	}
	if !strings.Contains(p, "Update on jobs j  (cost") || !strings.Contains(p, "(actual rows=10 loops=1)") {
		t.Errorf("the batch did not complete 10 jobs:\n%s", p)
	}
}

// A job holds a lease token exactly while it is active, and a deadline
// exactly while it holds a token: the completions' fence relies on it.
// The table has one CHECK constraint, compiled once per statement.
func TestJobsCheckLeaseAndState(t *testing.T) {
	t.Parallel()
	s := open(t, clock.NewFake(queuetest.Epoch))
	ctx := context.Background()
	jobs := pgx.Identifier{s.Schema(), "jobs"}.Sanitize()
	var checks []string
	rows, err := s.Pool().Query(ctx, `SELECT conname::text FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'c' ORDER BY 1`, jobs)
	if err != nil {
		t.Fatal(err)
	}
	if checks, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
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
