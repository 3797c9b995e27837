package pgqueue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// DefaultSchema is the schema the store's tables live in when
// Options.Schema is empty.
const DefaultSchema = "sluice"

// maxIdentLen is Postgres's limit on an identifier, in bytes.
const maxIdentLen = 63

// Options configures a Store. The zero value is the default.
type Options struct {
	// Schema is the Postgres schema holding the store's tables, created
	// by the migrations when missing; default "sluice". Several stores may
	// share a database in different schemas: they see none of each
	// other's jobs.
	Schema string
	// Clock is where the store reads the time; default the real clock.
	// Every time the store writes comes from it, never from the
	// database's now(), so a fake clock drives delays and leases.
	Clock clock.Clock
	// SkipMigrate leaves the schema as it is at Open: for operators who
	// apply migrations themselves (Migrate). Open then checks that the
	// schema is at this build's version and refuses it otherwise.
	// Default false: Open migrates.
	SkipMigrate bool
	// MaxConns bounds the pool's connections when Open creates the pool;
	// default pgxpool's (the URL's pool_max_conns, else 4 or the number of
	// CPUs, whichever is more). Ignored by OpenPool.
	MaxConns int32
	// Outbox records an event (queue.Event) in the same transaction as
	// every job transition to a final state, for a consumer such as
	// queue/webhook's Dispatcher to deliver (see backend.Outbox). It is the
	// schema's setting, kept by a trigger that Open creates or drops: the
	// last store to open the schema decides, so every process sharing it
	// should open it alike. Default off: with no consumer the outbox
	// would only grow.
	Outbox bool
	// Events keeps the event log (backend.EventLog): every new job, start,
	// progress report and final state is logged in the same transaction,
	// for Client.Subscribe and Client.Wait to follow. The schema's setting,
	// like Outbox. Default off: it costs a row per transition, pruned by
	// PruneEvents (the queue.Cleaner does it).
	Events bool
}

// Store is a backend.Backend on PostgreSQL. It is safe for concurrent use,
// also by many processes sharing the database: every transition is one
// statement or one transaction, fenced by row locks.
type Store struct {
	pool     *pgxpool.Pool
	ownsPool bool
	q        *queries
	ob       *sqlstore.OutboxStatements   // the outbox's statements
	sq       *sqlstore.ScheduleStatements // the schedules' statements
	lq       *sqlstore.ListStatements     // the listings' statements
	pq       *sqlstore.ProgressStatements // job progress's statements
	tq       *sqlstore.SecretStatements   // tenant secrets' statements
	fq       *sqlstore.FlowStatements     // the statements of reading flows
	schema   string
	clk      clock.Clock
	closed   atomic.Bool
	stop     chan struct{}
	done     *completer   // batches Complete calls
	notes    *notifier    // sends NOTIFYs after the store's own commits
	origin   string       // tells this store's NOTIFYs from others'
	ins      *inserter    // batches Enqueue calls
	outbox   bool         // Options.Outbox
	events   bool         // Options.Events
	reader   readerReg    // this store's registration as a blocked event reader
	resetAt  atomic.Int64 // when the pool was last emptied (see poolreset.go)

	subMu    sync.Mutex
	subs     sqlstore.Subscribers
	listenOn sync.Once      // starts the listener at the first Subscribe
	listenWG sync.WaitGroup // the listener goroutine
}

var (
	_ backend.Backend  = (*Store)(nil)
	_ backend.Notifier = (*Store)(nil)
	_ backend.Retrier  = (*Store)(nil)
)

// Open connects to the database at url (a postgres:// URL or a key=value
// connection string, as pgx reads them), migrates the schema unless
// opts.SkipMigrate, and returns the store. Close releases the pool.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	if url == "" {
		return nil, backend.InvalidArgument(queue.Field("", "url"), "must not be empty")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, backend.InvalidArgument(queue.Field("", "url"), "is not a Postgres connection string: %v", err)
	}
	if opts.MaxConns < 0 {
		return nil, backend.InvalidArgument(queue.Field("Options", "MaxConns"), "must not be negative, got %d", opts.MaxConns)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgqueue: connect: %w", err)
	}
	s, err := OpenPool(ctx, pool, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.ownsPool = true
	return s, nil
}

// OpenPool is Open on a pool the caller made and keeps: an application
// that shares its pool with the store. Close leaves the pool open.
func OpenPool(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Store, error) {
	schema, err := schemaOf(opts)
	if err != nil {
		return nil, err
	}
	if opts.SkipMigrate {
		err = checkVersion(ctx, pool, schema)
	} else {
		err = migrateOn(ctx, pool, schema)
	}
	if err != nil {
		return nil, err
	}
	if err := syncTriggers(ctx, pool, schema, opts); err != nil {
		return nil, err
	}
	s := &Store{
		pool: pool, q: newQueries(schema),
		ob: outboxStatements(schema), sq: scheduleStatements(schema), lq: listStatements(schema),
		pq: progressStatements(schema), tq: secretStatements(schema), fq: flowStatements(schema),
		schema: schema, clk: clock.Or(opts.Clock),
		stop: make(chan struct{}), outbox: opts.Outbox, events: opts.Events,
	}
	s.done = &completer{s: s, more: make(chan struct{}, 1)}
	s.notes = &notifier{s: s}
	s.origin = newOrigin()
	s.ins = &inserter{s: s}
	return s, nil
}

// schemaOf returns the schema opts names, after its default, or an error
// naming the field.
func schemaOf(opts Options) (string, error) {
	s := opts.Schema
	if s == "" {
		return DefaultSchema, nil
	}
	if len(s) > maxIdentLen {
		return "", backend.InvalidArgument(queue.Field("Options", "Schema"), "must be at most %d bytes, got %d", maxIdentLen, len(s))
	}
	for _, r := range s {
		if r < ' ' || r == 0x7f {
			return "", backend.InvalidArgument(queue.Field("Options", "Schema"), "must not hold control characters, got %q", s)
		}
	}
	return s, nil
}

// Pool returns the store's connection pool, for callers that run their
// own statements beside the store's (such as a transaction for EnqueueTx).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Schema returns the schema the store's tables live in.
func (s *Store) Schema() string { return s.schema }

// Close stops the store's listener and, when Open made the pool, closes
// it. Calls after Close return queue.ErrClosed.
func (s *Store) Close() error {
	s.subMu.Lock() // see Subscribe: no listener starts after this
	already := s.closed.Swap(true)
	s.subMu.Unlock()
	if already {
		return nil
	}
	close(s.stop)
	s.listenWG.Wait()
	s.ins.close()
	s.done.wg.Wait()
	s.notes.close()
	if s.ownsPool {
		s.pool.Close()
	}
	return nil
}

// now is the store's current time in Unix nanoseconds.
func (s *Store) now() int64 { return s.clk.Now().UnixNano() }

// check returns ErrClosed, wrapped, once the store is closed.
func (s *Store) check(op string) error {
	if s.closed.Load() {
		return fmt.Errorf("pgqueue: %s: %w", op, queue.ErrClosed)
	}
	return nil
}

// sentinels are the queue errors returned as they are.
var sentinels = []error{queue.ErrLeaseLost, queue.ErrNotFound, queue.ErrJobFinished, queue.ErrClosed,
	queue.ErrNotRetryable, queue.ErrDuplicate, queue.ErrInvalidArgument}

// wrap turns a store error into the package's error, keeping sentinels.
func (s *Store) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if s.closed.Load() {
		return fmt.Errorf("pgqueue: %s: %w", op, queue.ErrClosed)
	}
	if unstorable(err) {
		return errUnstorable(op, err)
	}
	s.noteFault(err)
	for _, e := range sentinels {
		if errors.Is(err, e) {
			return err
		}
	}
	return fmt.Errorf("pgqueue: %s: %w", op, err)
}

// tx runs fn in a transaction on the pool, committing when it returns nil.
func (s *Store) tx(ctx context.Context, op string, fn func(pgx.Tx) error) error {
	if err := s.check(op); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, s.pool, fn)
	return s.wrap(op, err)
}
