// Package pgqueue is a queue.Backend on PostgreSQL, through pgx's pool
// (github.com/jackc/pgx/v5, pure Go): for teams whose state already lives
// in Postgres, who want jobs they can inspect with SQL and enqueue in the
// same transaction as the rows they are about.
//
// # Use
//
//	store, err := pgqueue.Open(ctx, "postgres://app@db/app", pgqueue.Options{})
//	client := queue.NewClient(store)
//	worker := queue.NewWorker(store, queue.WorkerConfig{Queues: []string{"mail"}})
//
// Store.EnqueueTx (pgx.Tx) and Store.EnqueueSQLTx (*sql.Tx on the pgx
// driver) enqueue inside the caller's transaction: the job exists exactly
// when that transaction commits, and workers are woken only then.
//
// # Schema and migrations
//
// The tables live in their own schema (Options.Schema, default "sluice"),
// so they never collide with the application's. The migrations are
// embedded (migrations/NNNN_name.sql) and recorded in the schema's
// schema_migrations table. Open applies the missing ones unless
// Options.SkipMigrate; Migrate applies them for operators who do it by
// hand. Both run in one transaction under an advisory lock on the
// schema's name, so processes starting together migrate once, and a
// failed migration leaves the schema as it was. A schema newer than the
// build is refused.
//
// Times are stored as Unix nanoseconds (bigint) read from Options.Clock,
// never from the server's now(): the same representation as the SQLite
// store, exact to the nanosecond, and driven by a fake clock in tests.
//
// # Leasing and locking
//
// A Lease is one round trip: a pgx batch (one implicit transaction) first
// promotes the due scheduled and retrying jobs of the queues, then picks
// the best pending jobs (priority, then id, from the partial index
// jobs_ready) with FOR UPDATE SKIP LOCKED and makes them active in the
// same statement. Workers leasing at once skip the rows another holds
// instead of waiting for them, so there is no lock that every lease
// shares and no job is handed out twice. Every other transition is one
// UPDATE whose WHERE holds the fence (lease_token = the caller's token,
// which only an active job holds, by the table's CHECK; most also say
// state = 'active'): Postgres re-checks it on the latest row version
// after any lock wait, so a stale token changes nothing. Only when no row
// matched does a second query tell ErrNotFound from ErrLeaseLost.
//
// Complete, the call every job makes, is batched: calls that arrive while
// a batch is being written are written together by the next one, in one
// statement and one commit. A lone call is written at once, so this adds
// no latency; under load one WAL flush serves many jobs. Each call still
// returns only after its own job's transition has committed.
//
// Unique keys are decided under a transaction-scoped advisory lock on the
// schema, queue and key, so two transactions (in any processes) enqueuing
// one key take turns, and the second sees the first's job once it
// commits.
//
// # Tenants
//
// Every job gets its place in the fair order (backend.FairTag,
// backend.FairOrder) when it first becomes ready, as in the SQLite store.
// A queue's virtual time is the largest start tag it has leased, a
// tenant's finish tag the largest its jobs took. The lease that starts
// jobs keeps both in a row per queue and per tenant (queue_sched,
// fair_finish); a tenant's jobs not started yet add theirs, read from an
// index. So a plain enqueue locks nothing shared, and a lease holds those
// rows only from its end to its commit, which does not wait for a flush.
// A Lease stays
// one round trip while no job of a tenant is ready or due in its queues,
// no tenant's wake or MaxWait has come and no queue is paused; otherwise
// it runs the scheduler in a transaction. Every decision about a tenant
// (admitting, starting, releasing, pausing) is taken under a
// transaction-scoped advisory lock on it, with counts read after the lock,
// so a limit of N admits exactly N across processes. Jobs without tenant
// or group never take these locks. The scheduler is package sqlstore's,
// shared with the SQLite store: this store gives it its statements, these
// locks, its SKIP LOCKED candidates and its set-based promotion.
//
// # Groups
//
// Groups follow the same rules and canonical order as the SQLite store
// (internal/sched). Every decision about a group (admitting, starting,
// releasing, pausing, completing) is taken under a transaction-scoped
// advisory lock on it, so MaxConcurrency and
// MinInterval hold across processes and a group is marked done, and its
// completion job enqueued, exactly once. The group.completed event is no
// job's row change, so the step writes it to the outbox and the event log
// itself. A group's jobs are kept until the group has ended (done, and its
// completion job finished) and their retention counts from then; the
// group's row goes when its jobs are gone, and keeps the counts of the
// finished jobs deleted before it.
//
// # Lock order
//
// The advisory locks of tenants, groups and unique keys are one order,
// that of their int64 keys. A step waits for one only at its start,
// before any other statement, and only for a key greater than all it
// holds; any other it needs it tries to take without waiting, and when
// another transaction holds that one the step is rolled back and run
// again, waiting first, in key order, for every key its last run took or
// wanted (see locks.go). A Lease instead leaves the jobs whose scope is
// held, as it leaves rows another Lease holds, unless that leaves it
// nothing. A transaction waiting for an advisory lock holds no row and no
// greater key, so no cycle of waits passes through one; docs/postgres.md
// gives the whole argument.
//
// # Notifications
//
// Each transition that makes a job ready NOTIFYs the schema's channel with
// the queue's name, inside its own transaction, so the notification is
// delivered exactly when the job becomes visible and never for a
// transaction that rolled back. A store that has subscribers (a Worker)
// holds one connection of its own, outside the pool, that LISTENs and
// wakes the subscribers of that queue; an idle worker starts a new job
// within a round trip or two. Notifications are an optimisation, not the
// source of truth: when the listening connection drops, it reconnects
// with backoff and wakes every subscriber once it listens again (what was
// sent meanwhile is lost), and workers keep polling every PollInterval as
// the safety net.
//
// # Indexes
//
// Every transition changes state, which the partial indexes depend on, so
// no update is a HOT update and each adds entries to every index its new
// row version belongs to. The store therefore keeps full indexes to the
// primary key and (queue, state, id), used by Stats and listing; the
// others are partial and hold only the jobs they serve (ready, due,
// leased, finished, unique).
//
// # The outbox and the event log
//
// With Options.Outbox, triggers on the jobs table write the event of every
// job that reaches a final state (by an update, or stored final at once)
// into the outbox table, in the statement (so the transaction) that made
// it, whichever code made it: the store's own calls, EnqueueTx's
// transaction, or an operator's SQL. Code that finishes jobs writes no
// event of its own; events that are no job's row change (a group's
// completion) are written by emitEvent and logEvent.
// Dispatchers claim events with FOR UPDATE SKIP LOCKED, as workers lease
// jobs.
//
// With Options.Events, triggers write the event log (new jobs, starts,
// final states; SetProgress logs progress). A number drawn at write time
// cannot order the log for readers, since transactions commit in another
// order than they draw; rows are written unplaced and a reader first
// places every committed row (one placer at a time, under an advisory
// lock), so a place a reader has passed is never given again. The
// triggers NOTIFY the store's channel, which wakes blocked readers
// (Client.Wait, Client.Subscribe) through the store's listener.
//
// Both are the schema's settings: Open creates or drops the triggers, so
// the last store to open the schema decides for every process sharing it.
//
// # Flows
//
// Jobs that depend on others (JobSpec.DependsOn, Client.EnqueueFlow) keep
// their edges in job_deps. A trigger on the jobs table (jobs_state_moved,
// migration 0025, which also ends a group with its completion job)
// settles a parent's children in the statement that ends it, whichever code
// made the change: a failure or cancel cancels the children that follow
// it, level by level inside one call (the trigger does not fire for its
// own updates, so no chain is too deep), and children with no parent left
// become due jobs that the next Lease promotes, their queues notified at
// commit; a retry by hand puts back what it cancelled. A new child locks
// its parents' rows while it reads their states, so a parent that ends at
// the same moment either sees the edge or is seen ended. A job that is a
// parent (has_children) ends in a transaction of its own, never in a
// shared batch of completions, so two batches cannot lock the same
// children in opposite orders; the groups a cascade cancelled jobs of are
// settled in that transaction (flowsettle.go).
package pgqueue
