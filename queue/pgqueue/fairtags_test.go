package pgqueue_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/pgqueue"
	"github.com/sluicehq/sluice/queue/queuetest"
)

// fairStartCalls runs fn in a transaction that is rolled back and returns
// how many times it called the schema's fair_start, as the server counts
// them (track_functions, which needs a superuser).
func fairStartCalls(t *testing.T, s *pgqueue.Store, fn func(tx pgx.Tx)) int64 {
	t.Helper()
	ctx := context.Background()
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) // the rows are not the point
	if _, err := tx.Exec(ctx, "SET LOCAL track_functions = 'all'"); err != nil {
		t.Skipf("cannot count function calls here (needs a superuser): %v", err)
	}
	// The view also holds this connection's calls not yet reported, from
	// earlier transactions: the difference is fn's.
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
	fn(tx)
	return counted() - before
}

// An insert looks up a new job's fair start tag once per queue and tenant
// of the statement, however many rows and columns use it: the planner
// must not fold the look-up into every place that reads the tag (it did:
// three calls for one job, one a row for a batch, most of the batch's
// time).
func TestInsertLooksUpFairTagsOnce(t *testing.T) {
	t.Parallel()
	s := open(t, clock.NewFake(queuetest.Epoch))
	ctx := context.Background()
	batch := func(n int, tenants ...string) []queue.JobSpec {
		specs := make([]queue.JobSpec, n)
		for i := range specs {
			specs[i] = queue.JobSpec{Queue: "q", Kind: "k", Tenant: tenants[i%len(tenants)], MaxAttempts: 1}
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
			got := fairStartCalls(t, s, func(tx pgx.Tx) {
				if err := pgqueue.InsertOn(ctx, s, tx, c.specs); err != nil {
					t.Fatal(err)
				}
			})
			if got != c.want {
				t.Errorf("%s, run %d: fair_start called %d times, want %d", c.name, run, got, c.want)
			}
		}
	}
}

// The promotion of due jobs looks up the queue's start tag once, not once
// per job it promotes, and gives them consecutive tags.
func TestPromoteLooksUpFairTagsOnce(t *testing.T) {
	t.Parallel()
	s := open(t, clock.NewFake(queuetest.Epoch))
	ctx := context.Background()
	jobs := pgx.Identifier{s.Schema(), "jobs"}.Sanitize()
	for run := 1; run <= 7; run++ {
		var promoted, distinct, span int64
		got := fairStartCalls(t, s, func(tx pgx.Tx) {
			_, err := tx.Exec(ctx, `INSERT INTO `+jobs+` (queue, kind, state, run_at, max_attempts, created_at, updated_at)
				SELECT 'q', 'k', 'scheduled', g, 25, 1, 1 FROM generate_series(1, 50) g`)
			if err != nil {
				t.Fatal(err)
			}
			tag, err := tx.Exec(ctx, pgqueue.PromoteSQL(s), "q", int64(100))
			if err != nil {
				t.Fatal(err)
			}
			promoted = tag.RowsAffected()
			err = tx.QueryRow(ctx, `SELECT count(DISTINCT vstart), max(vstart) - min(vstart) FROM `+jobs+`
				WHERE queue = 'q' AND state = 'pending'`).Scan(&distinct, &span)
			if err != nil {
				t.Fatal(err)
			}
		})
		if got != 1 {
			t.Errorf("run %d: fair_start called %d times for 50 due jobs, want 1", run, got)
		}
		if promoted != 50 || distinct != 50 || span != 49*1000 {
			t.Errorf("run %d: promoted %d jobs with %d start tags spanning %d, want 50 with 50 consecutive", run, promoted, distinct, span)
		}
	}
}

// A lease keeps the fair tags of the jobs it starts: the queue's virtual
// time and the tenant's finish tag outlive the jobs, so a job enqueued
// after every earlier one is gone still starts after them.
func TestLeaseKeepsStartTags(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name                 string
		tenant               string
		wantVTime, wantStart int64
	}{
		// Plain jobs take the quick lease, a tenant's the scheduler's.
		{"plain jobs", "", 1000, 2000},
		{"a tenant's jobs", "a", 1000, 2000},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := open(t, clock.NewFake(queuetest.Epoch))
			spec := queue.JobSpec{Queue: "q", Kind: "k", Tenant: c.tenant, MaxAttempts: 1}
			if _, err := s.Enqueue(ctx, []queue.JobSpec{spec, spec}); err != nil {
				t.Fatal(err)
			}
			ls, err := s.Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, Max: 2, LeaseFor: time.Minute, WorkerID: "w"})
			if err != nil || len(ls) != 2 {
				t.Fatalf("Lease = %d jobs, %v; want 2", len(ls), err)
			}
			var vtime, finish int64
			if err := s.Pool().QueryRow(ctx, `SELECT (SELECT vtime FROM `+table(s, "queue_sched")+` WHERE queue = 'q'),
				(SELECT finish FROM `+table(s, "fair_finish")+` WHERE queue = 'q' AND tenant = $1)`, c.tenant).Scan(&vtime, &finish); err != nil {
				t.Fatal(err)
			}
			if vtime != c.wantVTime || finish != c.wantStart {
				t.Errorf("after leasing tags 0 and 1000: virtual time %d, finish tag %d; want %d and %d", vtime, finish, c.wantVTime, c.wantStart)
			}
			if _, err := s.Pool().Exec(ctx, `DELETE FROM `+table(s, "jobs")); err != nil {
				t.Fatal(err)
			}
			got, err := s.Enqueue(ctx, []queue.JobSpec{spec})
			if err != nil {
				t.Fatal(err)
			}
			var start int64
			if err := s.Pool().QueryRow(ctx, `SELECT vstart FROM `+table(s, "jobs")+` WHERE id = $1`, mustAtoi(t, got[0].Job.ID)).Scan(&start); err != nil {
				t.Fatal(err)
			}
			if start != c.wantStart {
				t.Errorf("start tag of a job enqueued after the others were deleted = %d, want %d", start, c.wantStart)
			}
		})
	}
}

// The migration that moved the started jobs' tags into rows carries the
// tags of jobs started before it.
func TestMigrationKeepsStartedTags(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := open(t, clock.NewFake(queuetest.Epoch))
	_, err := s.Pool().Exec(ctx, `INSERT INTO `+table(s, "jobs")+`
		(queue, kind, tenant, state, vstart, vfinish, started_at, finished_at, max_attempts, created_at, updated_at)
		VALUES ('m', 'k', 't', 'completed', 5000, 6000, 1, 1, 1, 1, 1), ('m', 'k', 't', 'completed', 3000, 4000, 1, 1, 1, 1, 1)`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `DELETE FROM `+table(s, "schema_migrations")+` WHERE version = 27`); err != nil {
		t.Fatal(err)
	}
	if err := pgqueue.Migrate(ctx, pgtest.URL(t), pgqueue.Options{Schema: s.Schema()}); err != nil {
		t.Fatal(err)
	}
	var vtime, finish int64
	if err := s.Pool().QueryRow(ctx, `SELECT (SELECT vtime FROM `+table(s, "queue_sched")+` WHERE queue = 'm'),
		(SELECT finish FROM `+table(s, "fair_finish")+` WHERE queue = 'm' AND tenant = 't')`).Scan(&vtime, &finish); err != nil {
		t.Fatal(err)
	}
	if vtime != 5000 || finish != 6000 {
		t.Errorf("after the migration: virtual time %d, finish tag %d; want 5000 and 6000", vtime, finish)
	}
}

func table(s *pgqueue.Store, name string) string { return pgx.Identifier{s.Schema(), name}.Sanitize() }

func mustAtoi(t *testing.T, id string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
