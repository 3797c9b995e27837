package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/sluicehq/sluice/queue"
)

// SQLHandle is what *sql.DB, *sql.Tx and *sql.Conn have for running
// statements.
type SQLHandle interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// OnSQL is a Tx on a database/sql handle: a store's read pool, or a
// transaction it or its caller began.
type OnSQL struct {
	Ctx context.Context
	Q   SQLHandle
}

// Exec implements Tx.
func (t OnSQL) Exec(query string, args ...any) (int64, error) {
	res, err := t.Q.ExecContext(t.Ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// QueryRow implements Tx.
func (t OnSQL) QueryRow(query string, args ...any) Row {
	return t.Q.QueryRowContext(t.Ctx, query, args...)
}

// Query implements Tx.
func (t OnSQL) Query(query string, args ...any) (Rows, error) {
	r, err := t.Q.QueryContext(t.Ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return SQLRows{r}, nil
}

// SQLRows is *sql.Rows with the Close of Rows; a close error that matters
// is also reported by Err.
type SQLRows struct{ *sql.Rows }

// Close implements Rows.
func (r SQLRows) Close() { _ = r.Rows.Close() }

// ClaimHeld turns the result of a write fenced by a token (a lease, a claim)
// into ErrLeaseLost when it changed no row.
func ClaimHeld(n int64, err error) error {
	if err == nil && n == 0 {
		return queue.ErrLeaseLost
	}
	return err
}

// CollectRows reads every row of rs with scan and closes it.
func CollectRows[T any](rs Rows, err error, scan func(Row) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []T
	for rs.Next() {
		v, err := scan(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rs.Err()
}

// PageLimit is a page's size: def when asked for none, at most max.
func PageLimit(asked, def, max int) int {
	if asked <= 0 {
		asked = def
	}
	return min(asked, max)
}

// IsNoRows reports whether err says a query found no row, from
// database/sql or from a dialect's driver that reports it alike (pgx's
// ErrNoRows wraps sql.ErrNoRows).
func IsNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
