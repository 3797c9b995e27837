package pgqueue

import (
	"context"
	"database/sql"
	"errors"
	"hash/fnv"

	"github.com/jackc/pgx/v5"
)

// rowsOf is a result set of pgx or of database/sql.
type rowsOf interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// dbq is an execer that also runs queries of many rows: what the
// scheduler works on, inside the store's transaction or the caller's.
type dbq interface {
	execer
	query(ctx context.Context, query string, args ...any) (rowsOf, error)
	// execN is exec that returns the number of rows changed.
	execN(ctx context.Context, query string, args ...any) (int64, error)
}

func (d pgxDB) execN(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := d.q.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (d sqlDB) execN(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := d.tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// pgxQueryer is what pgx.Tx and the pool have for queries of many rows.
type pgxQueryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func (d pgxDB) query(ctx context.Context, query string, args ...any) (rowsOf, error) {
	return d.q.(pgxQueryer).Query(ctx, query, args...)
}

// sqlRows is *sql.Rows with pgx's Close.
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

func (d sqlDB) query(ctx context.Context, query string, args ...any) (rowsOf, error) {
	r, err := d.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{r}, nil
}

// schedRuns bounds how often one step is run: a run that needs a scope
// lock it may not wait for is run again, waiting first for every lock the
// runs before it took or wanted (see stepLocks). Each run waits for more
// keys than the one before, from the few a step can touch, so a step runs
// again rarely and only a few times.
const schedRuns = 16

// schedTx runs fn in a transaction of the store with a scheduler for it,
// then wakes the queues that got pending jobs. A run that needs a scope
// lock another transaction holds, which it may not wait for, is rolled
// back and run again (see stepLocks); a deadlock is not run again: the
// lock order makes one impossible.
func (s *Store) schedTx(ctx context.Context, op string, fn func(sc *sched) error) error {
	if err := s.check(op); err != nil {
		return err
	}
	var sc *sched
	var err error
	var first []int64
	for run := 1; ; run++ {
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			sc = s.newSched(ctx, pgxDB{tx}, false)
			sc.locks.last = run == schedRuns
			if err := sc.lockKeys(first); err != nil {
				return err
			}
			if err := fn(sc); err != nil {
				return err
			}
			return sc.notify()
		})
		var busy *scopeBusy
		if !errors.As(err, &busy) || run == schedRuns {
			break
		}
		first = sc.locks.keys(busy.keys...)
	}
	if err != nil {
		return s.wrap(op, err)
	}
	sc.notifyReady()
	return nil
}

// scopeKey is the advisory lock key of a scheduling scope (kind "t" for a
// tenant, "g" for a group) in the store's schema.
func (s *Store) scopeKey(kind, name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("sluice.scope\x1f" + s.schema + "\x1f" + kind + "\x1f" + name))
	return int64(h.Sum64())
}
