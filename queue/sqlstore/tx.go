package sqlstore

// Row is one result row, as *sql.Row and pgx.Row have it.
type Row interface {
	Scan(dest ...any) error
}

// Rows is a result set of many rows, as pgx.Rows has it (database/sql's
// *sql.Rows is wrapped by its dialect for Close).
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Tx is one transaction of a store, as the shared logic sees it: it runs a
// dialect's statements with positional arguments. The transaction carries
// its context; a dialect may prepare and cache statements behind it.
type Tx interface {
	// Exec runs a statement and returns the number of rows it changed.
	Exec(query string, args ...any) (int64, error)
	// QueryRow runs a statement that returns at most one row.
	QueryRow(query string, args ...any) Row
	// Query runs a statement that returns many rows; the caller closes
	// them.
	Query(query string, args ...any) (Rows, error)
}
