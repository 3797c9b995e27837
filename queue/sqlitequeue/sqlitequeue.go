// Package sqlitequeue is a backend.Backend on an embedded SQLite file
// (modernc.org/sqlite, pure Go): the queue that needs no other server.
//
// The file runs in WAL mode, so readers never block the writer. SQLite
// allows one writer at a time; the backend sends every write through a
// single connection, so writers in one process queue up in Go instead of
// spinning on SQLITE_BUSY, and a busy timeout covers writers in other
// processes sharing the file. Every transition is one IMMEDIATE
// transaction. The schema is embedded and versioned (PRAGMA user_version)
// and migrated on Open.
package sqlitequeue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Options configures a Backend. The zero value is the default.
type Options struct {
	// Clock is where the backend reads the time; default the real clock.
	Clock clock.Clock
	// BusyTimeout is how long a write waits for another process holding
	// the file's write lock; default 5s.
	BusyTimeout time.Duration
	// ReadConns bounds the connections used for reads (Get, List, Stats);
	// default 4.
	ReadConns int
	// Durable syncs the file on every commit (synchronous=FULL), so a
	// committed transition survives a power cut, at a cost in speed. By
	// default (synchronous=NORMAL in WAL mode) every commit survives a
	// process crash but the latest ones may be lost on a power cut.
	Durable bool
	// Outbox records an event (queue.Event) in the same transaction as
	// every job transition to a final state, for a consumer such as
	// queue/webhook's Dispatcher to deliver (see backend.Outbox). Default
	// off: with no consumer the outbox would only grow. Every process
	// sharing the file must open it with the same setting, or the
	// transitions of the others record nothing.
	Outbox bool
	// Events keeps the event log (backend.EventLog): every new job, start,
	// progress report, final state and group completion is logged in the
	// same transaction, for Client.Subscribe and Client.Wait to follow.
	// Default off: it costs a row per transition, pruned by PruneEvents
	// (the queue.Cleaner does it). Like Outbox, it is the file's setting:
	// the last process to open the file decides.
	Events bool
}

// Backend is a backend.Backend on a SQLite file. It is safe for concurrent
// use, also by several processes sharing the file.
type Backend struct {
	w      *sql.DB // one connection: all writes
	ws     *stmts  // statements prepared on w
	r      *sql.DB // read-only pool
	clk    clock.Clock
	closed atomic.Bool
	outbox bool // Options.Outbox
	events bool // Options.Events

	feedMu sync.Mutex
	feed   chan struct{} // closed after a commit (eventlog.go)

	ops        chan *writeOp // to the writer goroutine
	stop       chan struct{} // closed by Close
	writerDone chan struct{} // closed when the writer has returned

	subs sqlstore.Subscribers
}

var _ backend.Backend = (*Backend)(nil)
var _ backend.Notifier = (*Backend)(nil)

// Open opens (creating if needed) the queue database at path and migrates
// its schema to the current version.
func Open(path string, opts Options) (*Backend, error) {
	if path == "" {
		return nil, backend.InvalidArgument(queue.Field("", "path"), "must not be empty")
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 5 * time.Second
	}
	if opts.ReadConns <= 0 {
		opts.ReadConns = 4
	}
	w, err := sql.Open("sqlite", dsn(path, opts, false))
	if err != nil {
		return nil, fmt.Errorf("sqlitequeue: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := migrate(context.Background(), w); err != nil {
		w.Close()
		return nil, err
	}
	if err := setEventTriggers(context.Background(), w, opts.Events); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlitequeue: event log: %w", err)
	}
	if err := setOutboxTriggers(context.Background(), w, opts.Outbox); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlitequeue: outbox: %w", err)
	}
	r, err := sql.Open("sqlite", dsn(path, opts, true))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlitequeue: open %s: %w", path, err)
	}
	r.SetMaxOpenConns(opts.ReadConns)
	r.SetMaxIdleConns(opts.ReadConns)
	ws := newStmts(w)
	if err := ws.prepareAll(context.Background()); err != nil {
		w.Close()
		r.Close()
		return nil, err
	}
	b := &Backend{
		w: w, ws: ws, r: r, clk: clock.Or(opts.Clock), outbox: opts.Outbox,
		events: opts.Events, feed: make(chan struct{}),
		ops: make(chan *writeOp), stop: make(chan struct{}), writerDone: make(chan struct{}),
	}
	go b.writer()
	return b, nil
}

func dsn(path string, opts Options, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", opts.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	if opts.Durable {
		q.Add("_pragma", "synchronous(FULL)")
	} else {
		q.Add("_pragma", "synchronous(NORMAL)")
	}
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		// Take the write lock at BEGIN, so a transaction never fails
		// half-way when it upgrades from reading to writing.
		q.Set("_txlock", "immediate")
		// Truncate the WAL file back to 64 MiB after a checkpoint, so a
		// burst does not leave a large file behind for good.
		q.Add("_pragma", "journal_size_limit(67108864)")
		// A cascade through a flow (migrations/0007_flows.sql) is a
		// trigger firing itself, once per level.
		q.Add("_pragma", "recursive_triggers(1)")
	}
	return "file:" + path + "?" + q.Encode()
}

// Close closes the database. Calls after Close return queue.ErrClosed.
func (b *Backend) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	close(b.stop)
	<-b.writerDone
	b.ws.close()
	return errors.Join(b.r.Close(), b.w.Close())
}

// now is the backend's current time in Unix nanoseconds.
func (b *Backend) now() int64 { return b.clk.Now().UnixNano() }

// wrap turns a store error into the package's error, keeping sentinels.
func (b *Backend) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if b.closed.Load() {
		return fmt.Errorf("sqlitequeue: %s: %w", op, queue.ErrClosed)
	}
	for _, s := range []error{queue.ErrLeaseLost, queue.ErrNotFound, queue.ErrJobFinished, queue.ErrClosed, queue.ErrNotRetryable, queue.ErrDuplicate, queue.ErrInvalidArgument} {
		if errors.Is(err, s) {
			return err
		}
	}
	return fmt.Errorf("sqlitequeue: %s: %w", op, err)
}
