package pgqueue_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/pgqueue"
)

// txKind is how each test drives a transaction: pgx or database/sql.
type txKind struct {
	name string
	// run begins a transaction, enqueues spec inside it, and commits or
	// rolls back.
	run func(t *testing.T, s *pgqueue.Store, spec queue.JobSpec, commit bool) *queue.Job
}

var txKinds = []txKind{
	{"pgx", func(t *testing.T, s *pgqueue.Store, spec queue.JobSpec, commit bool) *queue.Job {
		ctx := context.Background()
		tx, err := s.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		out, err := s.EnqueueTx(ctx, tx, spec)
		if err != nil {
			t.Fatalf("EnqueueTx: %v", err)
		}
		end(t, commit, func() error { return tx.Commit(ctx) }, func() error { return tx.Rollback(ctx) })
		return out[0].Job
	}},
	{"database/sql", func(t *testing.T, s *pgqueue.Store, spec queue.JobSpec, commit bool) *queue.Job {
		ctx := context.Background()
		db, err := sql.Open("pgx", pgtest.URL(t))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		out, err := s.EnqueueSQLTx(ctx, tx, spec)
		if err != nil {
			t.Fatalf("EnqueueSQLTx: %v", err)
		}
		end(t, commit, tx.Commit, tx.Rollback)
		return out[0].Job
	}},
}

func end(t *testing.T, commit bool, c, r func() error) {
	t.Helper()
	f := r
	if commit {
		f = c
	}
	if err := f(); err != nil {
		t.Fatalf("end of transaction (commit=%v): %v", commit, err)
	}
}

// TestEnqueueTxRollback: a job enqueued in a transaction that rolls back
// does not exist, and no worker of another store (another process, as
// far as its listener can tell) is woken for it.
func TestEnqueueTxRollback(t *testing.T) {
	for _, k := range txKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			s := open(t, nil)
			other := reopen(t, s)
			wake, stop := other.Subscribe([]string{"tx"})
			defer stop()
			// Two marks: once the second is relayed, the listener has
			// sent everything before it, its first wake-up included.
			syncNotify(t, s, other, "mark-1")
			syncNotify(t, s, other, "mark-2")
			drainNow(wake)

			j := k.run(t, s, queue.JobSpec{Queue: "tx", Kind: "k"}, false)
			if _, err := s.Get(context.Background(), j.ID); !errors.Is(err, queue.ErrNotFound) {
				t.Errorf("Get of a rolled-back job = %v, want ErrNotFound", err)
			}
			// Notifications arrive in commit order: had the rollback sent
			// one, it would be there by the time a later mark is.
			syncNotify(t, s, other, "mark-3")
			select {
			case <-wake:
				t.Error("a rolled-back enqueue woke a worker")
			default:
			}
			ls, err := s.Lease(context.Background(), backend.LeaseRequest{Queues: []string{"tx"}, WorkerID: "w", Max: 10, LeaseFor: time.Minute})
			if err != nil || len(ls) != 0 {
				t.Errorf("Lease after rollback = %d jobs, %v; want none", len(ls), err)
			}
		})
	}
}

// syncNotify enqueues a job in queue q (one no one else uses) on s and
// waits until other's listener relays its notification.
func syncNotify(t *testing.T, s, other *pgqueue.Store, q string) {
	t.Helper()
	ch, stop := other.Subscribe([]string{q})
	defer stop()
	if _, err := s.Enqueue(context.Background(), []queue.JobSpec{{Queue: q, Kind: "mark"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("the notification of queue %s never came", q)
	}
}

// drainNow empties ch without waiting.
func drainNow(ch <-chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

// TestEnqueueTxCommit: a committed job wakes a worker of another store
// and runs exactly once.
func TestEnqueueTxCommit(t *testing.T) {
	for _, k := range txKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			s := open(t, nil)
			other := reopen(t, s)
			wake, stop := other.Subscribe([]string{"tx"})
			defer stop()
			syncNotify(t, s, other, "mark-1")
			syncNotify(t, s, other, "mark-2")
			drainNow(wake)

			j := k.run(t, s, queue.JobSpec{Queue: "tx", Kind: "k", Payload: []byte("p")}, true)
			select {
			case <-wake:
			case <-time.After(10 * time.Second):
				t.Fatal("a committed enqueue woke no worker")
			}
			runs := runAll(t, other, "tx")
			if runs[j.ID] != 1 || len(runs) != 1 {
				t.Errorf("runs = %v, want job %s once", runs, j.ID)
			}
			if got, err := s.Get(context.Background(), j.ID); err != nil || got.State != queue.StateCompleted {
				t.Errorf("Get = %v, %v; want completed", got, err)
			}
		})
	}
}

// TestEnqueueTxUnique: a unique key held by a committed job makes the
// transaction's job a duplicate.
func TestEnqueueTxUnique(t *testing.T) {
	t.Parallel()
	s := open(t, nil)
	ctx := context.Background()
	spec := queue.JobSpec{Queue: "tx", Kind: "k", UniqueKey: "u"}
	first, err := s.Enqueue(ctx, []queue.JobSpec{spec})
	if err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error {
		out, err := s.EnqueueTx(ctx, tx, spec)
		if err == nil && (!out[0].Duplicate || out[0].Job.ID != first[0].Job.ID) {
			t.Errorf("EnqueueTx of a held key = %+v, want a duplicate of %s", out[0], first[0].Job.ID)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestEnqueueTxBadSpec: the transaction's enqueue checks specs as the
// Client does.
func TestEnqueueTxBadSpec(t *testing.T) {
	t.Parallel()
	s := open(t, nil)
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error {
		_, err := s.EnqueueTx(ctx, tx, queue.JobSpec{Queue: "tx"})
		return err
	})
	if !errors.Is(err, queue.ErrInvalidArgument) {
		t.Errorf("EnqueueTx without a kind = %v, want ErrInvalidArgument", err)
	}
	err = pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error {
		_, err := s.EnqueueTx(ctx, tx, queue.JobSpec{Queue: "tx", Kind: "k", DependsOn: []string{"1"}})
		return err
	})
	if !errors.Is(err, queue.ErrInvalidArgument) || !strings.Contains(err.Error(), "DependsOn") {
		t.Errorf("EnqueueTx with a parent that is no job = %v, want an invalid argument naming DependsOn", err)
	}
}

// reopen opens a second store on the schema of s, as another process would.
func reopen(t *testing.T, s *pgqueue.Store) *pgqueue.Store {
	t.Helper()
	o, err := pgqueue.Open(context.Background(), pgtest.URL(t), pgqueue.Options{Schema: s.Schema(), MaxConns: testConns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

// runAll leases and completes every ready job of q and counts the runs.
func runAll(t *testing.T, s *pgqueue.Store, q string) map[string]int {
	t.Helper()
	ctx := context.Background()
	runs := map[string]int{}
	for {
		ls, err := s.Lease(ctx, backend.LeaseRequest{Queues: []string{q}, WorkerID: "w", Max: 10, LeaseFor: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) == 0 {
			return runs
		}
		for _, l := range ls {
			runs[l.Job.ID]++
			if err := s.Complete(ctx, l.Job.ID, l.Token, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
}
