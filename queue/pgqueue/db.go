package pgqueue

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// execer runs statements for code shared between pgx (the store's pool, a
// pgx.Tx) and database/sql (a *sql.Tx on the pgx driver).
type execer interface {
	exec(ctx context.Context, query string, args ...any) error
	queryRow(ctx context.Context, query string, args ...any) scanner
}

// pgxQuerier is what pgx.Tx, *pgx.Conn and *pgxpool.Pool have in common.
type pgxQuerier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// pgxDB is an execer on pgx.
type pgxDB struct{ q pgxQuerier }

func (d pgxDB) exec(ctx context.Context, query string, args ...any) error {
	_, err := d.q.Exec(ctx, query, args...)
	return err
}

func (d pgxDB) queryRow(ctx context.Context, query string, args ...any) scanner {
	return d.q.QueryRow(ctx, query, args...)
}

// sqlDB is an execer on a database/sql transaction.
type sqlDB struct{ tx *sql.Tx }

func (d sqlDB) exec(ctx context.Context, query string, args ...any) error {
	_, err := d.tx.ExecContext(ctx, query, args...)
	return err
}

func (d sqlDB) queryRow(ctx context.Context, query string, args ...any) scanner {
	return d.tx.QueryRowContext(ctx, query, args...)
}

// isNoRows reports whether err says a query found no row, from pgx or
// database/sql.
func isNoRows(err error) bool {
	return errors.Is(err, pgx.ErrNoRows) || errors.Is(err, sql.ErrNoRows)
}
