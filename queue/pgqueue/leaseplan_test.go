package pgqueue_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue/pgqueue"
	"github.com/sluicehq/sluice/queue/queuetest"
)

// A lease reads the first ready jobs from their ordered index even when
// the table's statistics say it is empty, as they do for a queue analysed
// while new or drained: the planner must not read every ready job and
// sort them to take a few (with 40,000 ready, 23 ms a lease instead of
// 0.1 ms).
func TestLeaseReadsInOrderWithStaleStatistics(t *testing.T) {
	t.Parallel()
	s := open(t, clock.NewFake(queuetest.Epoch))
	ctx := context.Background()
	if _, err := s.Pool().Exec(ctx, "ANALYZE "+pgx.Identifier{s.Schema(), "jobs"}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	// 40,000 ready jobs, written as the store writes them (the plan is
	// what is tested, so the rows need only the columns it reads).
	_, err := s.Pool().Exec(ctx, `INSERT INTO `+pgx.Identifier{s.Schema(), "jobs"}.Sanitize()+`
		(queue, kind, state, band, vrank, vstart, vfinish, max_attempts, created_at, updated_at)
		SELECT 'q', 'k', 'pending', g % 3, g, g, g + 1, 25, 1, 1 FROM generate_series(1, 40000) g`)
	if err != nil {
		t.Fatal(err)
	}
	begin, lease := pgqueue.LeaseSQL(s)
	plan := func(begin string) string {
		tx, err := s.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if begin != "" {
			if _, err := tx.Exec(ctx, begin); err != nil {
				t.Fatal(err)
			}
		}
		rows, err := tx.Query(ctx, "EXPLAIN "+lease, "q", 10, "tok", int64(2), "w", int64(1))
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	if p := plan(""); !strings.Contains(p, "Sort") {
		t.Logf("this server's planner reads in order even without the settings:\n%s", p)
	}
	if p := plan(begin); !strings.Contains(p, "jobs_ready") || strings.Contains(p, "Sort") {
		t.Fatalf("the lease's plan reads the ready jobs out of order and sorts them:\n%s", p)
	}
}
