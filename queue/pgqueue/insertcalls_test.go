package pgqueue_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/pgqueue"
	"github.com/sluicehq/sluice/queue/queuetest"
)

// An insert looks up a new job's fair start tag once per queue and tenant
// of the statement, however many rows and columns use it: the planner
// must not fold the look-up into every place that reads the tag (it did:
// three calls for one job, one a row for a batch, most of the batch's
// time). The calls are counted by the
// server (track_functions), which needs a superuser.
func TestInsertLooksUpFairTagsOnce(t *testing.T) {
	t.Parallel()
	s := open(t, clock.NewFake(queuetest.Epoch))
	ctx := context.Background()
	calls := func(specs []queue.JobSpec) int64 {
		t.Helper()
		tx, err := s.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) // the rows are not the point
		if _, err := tx.Exec(ctx, "SET LOCAL track_functions = 'all'"); err != nil {
			t.Skipf("cannot count function calls here (needs a superuser): %v", err)
		}
		// The view also holds this connection's calls not yet reported,
		// from earlier transactions: the difference is this insert's.
		counted := func() (n int64) {
			t.Helper()
			err := tx.QueryRow(ctx, `SELECT coalesce(sum(calls), 0) FROM pg_stat_xact_user_functions
				WHERE schemaname = $1 AND funcname = 'fair_start'`, s.Schema()).Scan(&n)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := counted()
		if err := pgqueue.InsertOn(ctx, s, tx, specs); err != nil {
			t.Fatal(err)
		}
		return counted() - before
	}
	spec := func(tenant string) queue.JobSpec {
		return queue.JobSpec{Queue: "q", Kind: "k", Tenant: tenant, MaxAttempts: 1}
	}
	batch := func(n int, tenants ...string) []queue.JobSpec {
		specs := make([]queue.JobSpec, n)
		for i := range specs {
			specs[i] = spec(tenants[i%len(tenants)])
		}
		return specs
	}
	for _, c := range []struct {
		name  string
		specs []queue.JobSpec
		want  int64
	}{
		{"one job", batch(1, ""), 1},
		{"one job of a tenant", batch(1, "a"), 1},
		{"100 jobs", batch(100, ""), 1},
		{"100 jobs of two tenants", batch(100, "a", "b"), 2},
	} {
		// Past five runs Postgres may switch a statement to a generic
		// plan: both kinds are checked.
		for run := 1; run <= 7; run++ {
			if got := calls(c.specs); got != c.want {
				t.Errorf("%s, run %d: fair_start called %d times, want %d", c.name, run, got, c.want)
			}
		}
	}
}
