package pgqueue

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// Lease implements backend.Backend, mostly in one round trip: the quick
// lease picks the best pending jobs with FOR UPDATE SKIP LOCKED and makes
// them active in the same statement, unless a timed job of the queues is
// due or the scheduler has work (tenants, groups, pauses, timers). When
// it takes nothing, the full lease runs: a pgx batch (one implicit
// transaction) promotes the due jobs, asks whether the scheduler is
// needed, and leases again. Concurrent leasers skip each other's rows
// instead of waiting on them, so no lock is shared by all leases.
func (s *Store) Lease(ctx context.Context, req backend.LeaseRequest) ([]queue.Lease, error) {
	if len(req.Queues) == 0 || req.Max < 1 || req.LeaseFor <= 0 {
		return nil, backend.InvalidArgument(queue.Field("", "LeaseRequest"), "needs queues, Max >= 1 and LeaseFor > 0, got %d queues, Max %d, LeaseFor %s",
			len(req.Queues), req.Max, req.LeaseFor)
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if err := s.check("lease"); err != nil {
		return nil, err
	}
	prefix, err := sqlstore.LeaseTokenPrefix()
	if err != nil {
		return nil, err
	}
	now := s.now()
	var queues any = req.Queues
	quick, full := s.q.quickMany, leaseStmts{s.q.promoteMany, s.q.gateMany, s.q.leaseMany}
	if len(req.Queues) == 1 {
		queues, quick, full = req.Queues[0], s.q.quickOne, leaseStmts{s.q.promoteOne, s.q.gateOne, s.q.leaseOne}
	}
	until := sqlstore.NanosAfter(now, req.LeaseFor)
	out, err := s.quickLease(ctx, quick, queues, req, prefix, until, now)
	if err == nil && len(out) == 0 {
		out, err = s.fullLease(ctx, full, queues, req, prefix, until, now)
	}
	if err != nil {
		return nil, s.wrap("lease", err)
	}
	s.done.held.Add(int64(len(out)))
	return out, nil
}

// leaseStmts are the full lease's statements for one queue or several.
type leaseStmts struct{ promote, gate, lease string }

// fullLease promotes the due jobs of the queues, asks whether the
// scheduler is needed, and leases, in one pgx batch (one implicit
// transaction); when it took nothing and the scheduler is needed, the
// scheduler leases.
func (s *Store) fullLease(ctx context.Context, st leaseStmts, queues any, req backend.LeaseRequest, prefix string, until, now int64) ([]queue.Lease, error) {
	b := &pgx.Batch{}
	b.Queue(asyncCommit)
	b.Queue(st.promote, queues, now)
	b.Queue(st.gate, queues, now)
	b.Queue(st.lease, queues, req.Max, prefix, until, req.WorkerID, now)
	br := s.pool.SendBatch(ctx, b)
	out, needSched, err := readLeases(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil && len(out) == 0 && needSched {
		err = s.schedTx(ctx, "lease", func(sc *sched) error {
			out, err = s.leaseSched(sc, req, prefix)
			return err
		})
	}
	return out, err
}

// quickLease runs the quick lease (Lease): while the queues have ready
// jobs and nothing for the promotion or the scheduler to do, which is
// how a busy queue mostly is, a lease is this one statement, not four.
func (s *Store) quickLease(ctx context.Context, quick string, queues any, req backend.LeaseRequest, prefix string, until, now int64) ([]queue.Lease, error) {
	var out []queue.Lease
	err := s.queryAfter(ctx, asyncCommit, quick, []any{queues, req.Max, prefix, until, req.WorkerID, now}, func(rows pgx.Rows) (err error) {
		out, err = scanLeases(rows)
		return err
	})
	return out, err
}

// queryAfter sends setup (settings for the transaction) and then sql in
// one round trip, one implicit transaction, and hands sql's rows to read.
func (s *Store) queryAfter(ctx context.Context, setup, sql string, args []any, read func(pgx.Rows) error) error {
	b := &pgx.Batch{}
	b.Queue(setup)
	b.Queue(sql, args...)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return err
	}
	rows, err := br.Query()
	if err != nil {
		return err
	}
	if err := read(rows); err != nil {
		return err
	}
	return br.Close()
}

// asyncCommit lets a lease's commit return before its WAL reaches disk.
// A lease lost to a server crash leaves its job as it was before, ready,
// and it runs again, as it would after the lease expired: no job is lost,
// and the at-least-once contract already allows the second run. Every
// later synchronous commit (a completion, an enqueue) flushes the lease
// with it, as the WAL is written in order.
//
// It also keeps the lease's reads of ready jobs on their ordered index
// (orderedReads) and plans its statements once (genericPlansConfig).
const asyncCommit = `SELECT set_config('synchronous_commit', 'off', true), ` + genericPlansConfig + `, ` + orderedReadsConfig

// genericPlansConfig makes the statements after it in the lease's
// transaction run on one plan per connection instead of planning each
// run anew. Postgres plans a prepared statement for its parameters on
// each of its first five runs, then keeps doing so whenever the plan it
// would keep looks dearer, which the lease's settings (orderedReads) make
// it do for good: planning was an eighth of the server's time on a queue
// draining a backlog. Under those settings the lease's statements have
// one good plan even when it is made on an empty table and kept while
// the table grows (TestLeasePlannedOnEmptyTableReadsInOrder); a batch of
// completions has one under completeConfig's.
const genericPlansConfig = `set_config('plan_cache_mode', 'force_generic_plan', true)`

// orderedReads keeps the reads of a transaction that takes the first
// ready jobs of a queue (ORDER BY band, vrank, id LIMIT n) on the index
// that holds them in that order (jobs_ready), whatever the table's
// statistics say. A queue's table is often analysed while it is empty or
// nearly (new, truncated, drained): the planner then expects a row or two
// and may read every ready job of the queue through another index and
// sort them, to take the first few. With 40,000 jobs ready that was
// 23 ms a lease instead of 0.1 ms, for every lease until the next
// automatic ANALYZE, and throughput fell with the backlog. Sorts and
// sequential scans off for the transaction leave the planner the ordered
// index: both only become dear, so a read with no other way keeps them
// (the promotion's window needs its sort). Dear plans would pass the
// server's thresholds for compiling a statement (JIT), hundreds of
// milliseconds each: that is off too.
const orderedReads = `SELECT ` + orderedReadsConfig

const orderedReadsConfig = `set_config('enable_sort', 'off', true), set_config('enable_seqscan', 'off', true), ` +
	`set_config('jit', 'off', true)`

// readLeases reads the promotion's result, whether the scheduler is
// needed, then the leased jobs.
func readLeases(br pgx.BatchResults) ([]queue.Lease, bool, error) {
	if _, err := br.Exec(); err != nil {
		return nil, false, err
	}
	if _, err := br.Exec(); err != nil {
		return nil, false, err
	}
	var needSched bool
	if err := br.QueryRow().Scan(&needSched); err != nil {
		return nil, false, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, false, err
	}
	out, err := scanLeases(rows)
	return out, needSched, err
}

// scanLeases reads leased jobs (job columns, token, band, rank) and
// returns them in the order leased: RETURNING keeps none.
func scanLeases(rows rowsOf) ([]queue.Lease, error) {
	defer rows.Close()
	type leased struct {
		l          queue.Lease
		band, rank int64
		id         int64
	}
	var list []leased
	var token string
	var band, rank int64
	js := sqlstore.NewJobScan(&token, &band, &rank)
	for rows.Next() {
		j, err := js.Scan(rows)
		if err != nil {
			return nil, err
		}
		list = append(list, leased{l: queue.Lease{Job: j, Token: token}, band: band, rank: rank, id: js.RowID()})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if a.band != b.band {
			return a.band < b.band
		}
		if a.rank != b.rank {
			return a.rank < b.rank
		}
		return a.id < b.id
	})
	out := make([]queue.Lease, len(list))
	for i, x := range list {
		out[i] = x.l
	}
	return out, nil
}

// mustID is sqlstore.ParseID for an id the store itself produced.
func mustID(id string) int64 {
	n, _ := sqlstore.ParseID(id)
	return n
}

// fenced is Store.fenced in a step.
func (sc *sched) fenced(id int64) error {
	var ok bool
	if err := sc.db.queryRow(sc.ctx, sc.s.q.exists, id).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return queue.ErrNotFound
	}
	return queue.ErrLeaseLost
}

// fenced classifies a transition that matched no row: the job is missing,
// or the token no longer holds it.
func (s *Store) fenced(ctx context.Context, db pgxQuerier, id int64) error {
	var ok bool
	if err := db.QueryRow(ctx, s.q.exists, id).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return queue.ErrNotFound
	}
	return queue.ErrLeaseLost
}

// Extend implements backend.Backend.
func (s *Store) Extend(ctx context.Context, id, token string, leaseFor time.Duration) (backend.LeaseStatus, error) {
	token = lookupToken(token)
	rid, err := sqlstore.ParseID(id)
	if err != nil {
		return backend.LeaseStatus{}, err
	}
	if err := s.check("extend"); err != nil {
		return backend.LeaseStatus{}, err
	}
	now := s.now()
	var until int64
	var cancel bool
	err = s.pool.QueryRow(ctx, s.q.extend, sqlstore.NanosAfter(now, leaseFor), now, rid, token).Scan(&until, &cancel)
	if isNoRows(err) {
		err = s.fenced(ctx, s.pool, rid)
	}
	if err != nil {
		return backend.LeaseStatus{}, s.wrap("extend", err)
	}
	return backend.LeaseStatus{Until: sqlstore.FromNanos(until), CancelRequested: cancel}, nil
}

// Fail implements backend.Backend. It reads the held job under its row lock
// (the history of errors is kept in Go), then writes the new state.
func (s *Store) Fail(ctx context.Context, id, token string, f backend.Failure) (queue.State, error) {
	token = lookupToken(token)
	f.Error = queue.StorableError(f.Error)
	rid, err := sqlstore.ParseID(id)
	if err != nil {
		return "", err
	}
	now := s.now()
	var next queue.State
	var q string
	s.done.held.Add(-1)
	err = s.schedTx(ctx, "fail", func(sc *sched) error {
		_, tenant, grp, _, err := sc.jobScopes(rid)
		if err != nil {
			return err
		}
		var attempt, maxAttempts int
		var cancel bool
		var errs string
		err = sc.db.queryRow(ctx, s.q.holder, rid, token).Scan(&attempt, &maxAttempts, &cancel, &errs, &q)
		if isNoRows(err) {
			return sc.fenced(rid)
		} else if err != nil {
			return err
		}
		var hist []queue.AttemptError
		if err := json.Unmarshal([]byte(errs), &hist); err != nil {
			return err
		}
		var histJSON string
		var finished, runAt int64 // a final job's run_at 0 keeps it
		next, histJSON, finished, runAt, err = sqlstore.FailOutcome(f, attempt, maxAttempts, cancel, hist, now)
		if err != nil {
			return err
		}
		var one int
		err = sc.db.queryRow(ctx, s.q.fail, string(next), f.Error, histJSON, runAt, finished, now, rid, token).Scan(&one)
		if isNoRows(err) {
			return sc.fenced(rid) // its row is locked: never so
		} else if err != nil {
			return err
		}
		return sc.settle(rid, q, tenant, grp, next)
	})
	if err != nil {
		return "", err
	}
	if next == queue.StateRetrying && f.RetryIn <= 0 {
		s.wake(q)
	}
	return next, nil
}

// Snooze implements backend.Backend.
func (s *Store) Snooze(ctx context.Context, id, token string, d time.Duration) (queue.State, error) {
	return s.giveBack(ctx, "snooze", id, token, sqlstore.SnoozeState(d), d)
}

// Requeue implements backend.Backend.
func (s *Store) Requeue(ctx context.Context, id, token string) (queue.State, error) {
	return s.giveBack(ctx, "requeue", id, token, queue.StatePending, 0)
}

// giveBack ends an attempt without spending it: the job goes to next
// (cancelled instead when a cancel was requested) with RunAt = now + d.
func (s *Store) giveBack(ctx context.Context, op, id, token string, next queue.State, d time.Duration) (queue.State, error) {
	token = lookupToken(token)
	rid, err := sqlstore.ParseID(id)
	if err != nil {
		return "", err
	}
	if err := s.check(op); err != nil {
		return "", err
	}
	now := s.now()
	var got, q string
	s.done.held.Add(-1)
	err = s.pool.QueryRow(ctx, s.q.giveBack, string(next), now, sqlstore.NanosAfter(now, d), rid, token).Scan(&got, &q)
	if isNoRows(err) { // lost its lease, or has a tenant or group
		st, err := s.giveBackScoped(ctx, op, rid, token, next, sqlstore.NanosAfter(now, d))
		return st, s.wrap(op, err)
	}
	if err != nil {
		return "", s.wrap(op, err)
	}
	if queue.State(got) == queue.StatePending {
		s.wake(q)
	}
	return queue.State(got), nil
}
