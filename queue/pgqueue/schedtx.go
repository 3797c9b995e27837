package pgqueue

import (
	"context"
	"database/sql"
	"errors"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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

// schedTries bounds how often a scheduler transaction is run again after
// Postgres broke a deadlock between scope locks by aborting it.
const schedTries = 5

// schedTx runs fn in a transaction of the store with a scheduler for it,
// then wakes the queues that got pending jobs. A transaction chosen as a
// deadlock's victim (two steps locking the same scopes in different
// orders) is run again.
func (s *Store) schedTx(ctx context.Context, op string, fn func(sc *sched) error) error {
	if err := s.check(op); err != nil {
		return err
	}
	var sc *sched
	var err error
	for try := 1; ; try++ {
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			sc = s.newSched(ctx, pgxDB{tx})
			if err := fn(sc); err != nil {
				return err
			}
			return sc.notify()
		})
		if !isRetryable(err) || try == schedTries {
			break
		}
		time.Sleep(time.Duration(try) * 5 * time.Millisecond)
	}
	if err != nil {
		return s.wrap(op, err)
	}
	sc.notifyReady()
	return nil
}

// isRetryable reports a deadlock or serialization failure.
func isRetryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// scopeKey is the advisory lock key of a scheduling scope (kind "t" for a
// tenant, "g" for a group) in the store's schema.
func (s *Store) scopeKey(kind, name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("sluice.scope\x1f" + s.schema + "\x1f" + kind + "\x1f" + name))
	return int64(h.Sum64())
}
