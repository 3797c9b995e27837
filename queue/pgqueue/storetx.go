package pgqueue

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/queue/sqlstore"
)

// pgxAll is what the pool, a pgx.Tx and a *pgx.Conn have for running
// statements.
type pgxAll interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// onPgx is a sqlstore.Tx on the pool or on a pgx transaction.
type onPgx struct {
	ctx context.Context
	q   pgxAll
}

func (t onPgx) Exec(query string, args ...any) (int64, error) {
	tag, err := t.q.Exec(t.ctx, query, args...)
	return tag.RowsAffected(), err
}

func (t onPgx) QueryRow(query string, args ...any) sqlstore.Row {
	return t.q.QueryRow(t.ctx, query, args...)
}

func (t onPgx) Query(query string, args ...any) (sqlstore.Rows, error) {
	return t.q.Query(t.ctx, query, args...)
}

// pgParam is Postgres's n-th positional parameter.
func pgParam(n int) string { return "$" + strconv.Itoa(n) }
