package sqlitequeue

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"sync"

	"github.com/sluicehq/sluice/queue/sqlstore"
)

// stmts caches prepared statements on one *sql.DB. Parsing a statement
// costs about as much as running it, and the writer has a single
// connection, so each statement is prepared once for the file's lifetime.
type stmts struct {
	db     *sql.DB
	mu     sync.Mutex
	m      map[string]*sql.Stmt
	sealed bool // after Open: never prepare again (the connection may be in a transaction)
}

func newStmts(db *sql.DB) *stmts { return &stmts{db: db, m: map[string]*sql.Stmt{}} }

func (s *stmts) get(ctx context.Context, query string) (*sql.Stmt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.m[query]; ok || s.sealed {
		return st, nil
	}
	st, err := s.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s.m[query] = st
	return st, nil
}

func (s *stmts) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.m {
		_ = st.Close()
	}
	s.m = nil
}

// wtx is a write transaction that runs cached statements.
type wtx struct {
	ctx context.Context
	tx  *sql.Tx
	s   *stmts
	gen uint64 // statements run, so a read can tell nothing ran since
}

func (w *wtx) exec(query string, args ...any) (sql.Result, error) {
	w.gen++
	st, err := w.s.get(w.ctx, query)
	if err != nil || st == nil {
		return w.tx.ExecContext(w.ctx, query, args...)
	}
	return w.tx.StmtContext(w.ctx, st).ExecContext(w.ctx, args...)
}

func (w *wtx) query(query string, args ...any) (*sql.Rows, error) {
	w.gen++
	st, err := w.s.get(w.ctx, query)
	if err != nil || st == nil {
		return w.tx.QueryContext(w.ctx, query, args...)
	}
	return w.tx.StmtContext(w.ctx, st).QueryContext(w.ctx, args...)
}

// queryRow is QueryRow on a cached statement; a preparation error is
// reported by Scan.
func (w *wtx) queryRow(query string, args ...any) rowScanner {
	w.gen++
	st, err := w.s.get(w.ctx, query)
	if err != nil || st == nil {
		return w.tx.QueryRowContext(w.ctx, query, args...)
	}
	return w.tx.StmtContext(w.ctx, st).QueryRowContext(w.ctx, args...)
}

type rowScanner interface{ Scan(dest ...any) error }

// hotQueries are the constant statements prepared at Open.
var hotQueries []string

// hot registers a constant statement to prepare at Open and returns it.
func hot(q string) string {
	hotQueries = append(hotQueries, q)
	return q
}

// prepareAll prepares every registered statement on the writer. It runs
// before any transaction, while the single connection is free.
func (s *stmts) prepareAll(ctx context.Context) error {
	for _, q := range hotQueries {
		if _, err := s.get(ctx, q); err != nil {
			return fmt.Errorf("sqlitequeue: prepare %q: %w", q, err)
		}
	}
	s.mu.Lock()
	s.sealed = true
	s.mu.Unlock()
	return nil
}

// Exec implements sqlstore.Tx.
func (w *wtx) Exec(query string, args ...any) (int64, error) {
	res, err := w.exec(query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// QueryRow implements sqlstore.Tx.
func (w *wtx) QueryRow(query string, args ...any) sqlstore.Row { return w.queryRow(query, args...) }

// Query implements sqlstore.Tx.
func (w *wtx) Query(query string, args ...any) (sqlstore.Rows, error) {
	r, err := w.query(query, args...)
	if err != nil {
		return nil, err
	}
	return sqlstore.SQLRows{Rows: r}, nil
}

// sqlParam is SQLite's n-th positional parameter.
func sqlParam(n int) string { return "?" + strconv.Itoa(n) }
