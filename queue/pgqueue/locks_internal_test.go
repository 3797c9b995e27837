package pgqueue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// openInternal opens a store in a fresh schema of the test database,
// reading the time from clk; it skips t without a database.
func openInternal(t *testing.T, clk clock.Clock) *Store {
	t.Helper()
	url := pgtest.URL(t)
	s, err := Open(context.Background(), url, Options{Schema: pgtest.Schema(t, url), Clock: clk, MaxConns: 4})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// inStep runs fn in a transaction of s with a scheduler for it, once,
// and rolls back when fn fails.
func inStep(t *testing.T, s *Store, fn func(sc *sched) error) error {
	t.Helper()
	ctx := context.Background()
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return fn(s.newSched(ctx, pgxDB{tx}, false)) })
}

// TestStepWaitsForLocksOnlyFirst: a step waits for a scope's lock only
// before it has run any other statement and only for a key above every
// key it holds; any other lock another transaction holds fails the step
// with *scopeBusy at once instead of waiting (a wait there could close a
// cycle).
func TestStepWaitsForLocksOnlyFirst(t *testing.T) {
	t.Parallel()
	s := openInternal(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	held := s.scopeKey(kindTenant, "held")
	other, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Rollback(ctx) }()
	if _, err := other.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, held); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		first func(sc *sched) error
	}{
		{"after a write", func(sc *sched) error {
			return sc.exec(`INSERT INTO __schema__.tenants (tenant) VALUES ('w') ON CONFLICT DO NOTHING`)
		}},
		{"after a greater key", func(sc *sched) error { return sc.lockKey(held + 1) }},
		{"after a read through the step", func(sc *sched) error {
			var n int
			return sc.row(`SELECT count(*) FROM __schema__.jobs`).Scan(&n)
		}},
	}
	for _, tc := range cases {
		err := inStep(t, s, func(sc *sched) error {
			if err := tc.first(sc); err != nil {
				return err
			}
			return sc.lock(kindTenant, "held")
		})
		var busy *scopeBusy
		if !errors.As(err, &busy) {
			t.Errorf("%s: locking a scope another transaction holds = %v; want *scopeBusy at once", tc.name, err)
		}
	}
	// A step that has only peeked may still wait: it gets the lock once
	// the other transaction ends.
	got := make(chan error, 1)
	go func() {
		got <- inStep(t, s, func(sc *sched) error {
			var n int
			if err := sc.peek(`SELECT count(*) FROM __schema__.jobs`).Scan(&n); err != nil {
				return err
			}
			return sc.lock(kindTenant, "held")
		})
	}()
	if err := other.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Errorf("a fresh step locking a scope: %v; want it to wait and take it", err)
	}
}

// TestPlaceFromStaleRead: a due job read by one Lease's promotion and
// placed meanwhile by another (then leased, or leased and completed) is
// left as it is when the first places it: the write is conditioned on
// the state read, so it neither breaks the jobs_valid check (a waiting
// job holding a lease) nor sends a finished job back to waiting.
func TestPlaceFromStaleRead(t *testing.T) {
	t.Parallel()
	for _, complete := range []bool{false, true} {
		clk := clock.NewFake(time.Unix(1_700_000_000, 0))
		s := openInternal(t, clk)
		ctx := context.Background()
		if err := s.SetTenant(ctx, "t", queue.TenantConfig{Limit: 1}); err != nil {
			t.Fatal(err)
		}
		out, err := s.Enqueue(ctx, []queue.JobSpec{
			{Queue: "q", Kind: "k", Tenant: "t", RunAt: clk.Now().Add(time.Second)},
			{Queue: "q", Kind: "k", Tenant: "t"},
		})
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(2 * time.Second)
		due := sqlstore.Placing{ID: mustID(out[0].Job.ID), Queue: "q", Tenant: "t", From: string(queue.StateScheduled)}
		ls, err := s.Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, WorkerID: "w", Max: 1, LeaseFor: time.Minute})
		if err != nil || len(ls) != 1 {
			t.Fatalf("Lease = %d, %v; want one job", len(ls), err)
		}
		// The second job is leased first (it was ready first); the limit
		// of 1 leaves the due one waiting once promoted. Lease it too.
		if err := s.Complete(ctx, ls[0].Job.ID, ls[0].Token, nil); err != nil {
			t.Fatal(err)
		}
		ls, err = s.Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, WorkerID: "w", Max: 1, LeaseFor: time.Minute})
		if err != nil || len(ls) != 1 || ls[0].Job.ID != out[0].Job.ID {
			t.Fatalf("Lease = %+v, %v; want the due job %s", ls, err, out[0].Job.ID)
		}
		want := queue.StateActive
		if complete {
			if err := s.Complete(ctx, ls[0].Job.ID, ls[0].Token, nil); err != nil {
				t.Fatal(err)
			}
			want = queue.StateCompleted
		}
		var placed bool
		err = inStep(t, s, func(sc *sched) error {
			var err error
			placed, err = sc.Place(due)
			return err
		})
		if err != nil || placed {
			t.Fatalf("placing the job as read while scheduled = %v, %v; want false, nil", placed, err)
		}
		j, err := s.Get(ctx, out[0].Job.ID)
		if err != nil || j.State != want {
			t.Fatalf("job after the stale placing = %+v, %v; want %s", j, err, want)
		}
	}
}

// TestUniqueKeysRepeated: the lock keys of a batch's unique keys are each
// key's own, however often a key repeats in the batch: the key the
// server takes for the key alone (hashtextextended of its lock name).
func TestUniqueKeysRepeated(t *testing.T) {
	t.Parallel()
	s := openInternal(t, nil)
	a, b := uniqueName{"q", "a"}, uniqueName{"q", "b"}
	err := inStep(t, s, func(sc *sched) error {
		got, err := sc.uniqueKeys([]uniqueName{a, a, b, a})
		if err != nil {
			return err
		}
		for i, u := range []uniqueName{a, a, b, a} {
			var want int64
			if err := sc.peek(`SELECT hashtextextended($1, 0)`, s.lockName(u)).Scan(&want); err != nil {
				return err
			}
			if got[i] != want {
				t.Errorf("key %d (%s) = %d, want %d", i, u.key, got[i], want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
