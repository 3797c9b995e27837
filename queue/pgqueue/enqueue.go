package pgqueue

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// Enqueue implements backend.Backend. A batch without unique keys, tenants,
// groups or parents is one INSERT (one implicit transaction), shared with
// the calls made at the same time (see inserter); another batch runs in a
// scheduler's step that locks every key and scope of its jobs first (see
// lockSpecs). The NOTIFY that wakes other processes follows the commit
// (see notifier).
func (s *Store) Enqueue(ctx context.Context, specs []queue.JobSpec) ([]queue.Enqueued, error) {
	if err := s.check("enqueue"); err != nil {
		return nil, err
	}
	if len(specs) == 0 {
		return []queue.Enqueued{}, nil
	}
	var out []queue.Enqueued
	var err error
	switch {
	case hasDeps(specs) || hasUnique(specs) || hasScoped(specs):
		err = s.schedTx(ctx, "enqueue", func(sc *sched) error {
			out, err = s.enqueueOn(sc, specs)
			return err
		})
		if err != nil {
			return nil, err
		}
	default:
		out, err = s.enqueueShared(ctx, specs)
	}
	if err != nil {
		return nil, s.wrap("enqueue", err)
	}
	s.wakeAfter(readyQueues(out))
	return out, nil
}

// EnqueueTx stores specs as new jobs inside the caller's transaction tx,
// which must be on the store's database: the jobs exist exactly when tx
// commits, and workers are woken only then (NOTIFY is delivered at
// commit). A rolled-back tx leaves no job and wakes no worker. specs are
// checked and given defaults as queue.Client.EnqueueBatch does.
//
// Unique keys are locked with transaction-scoped advisory locks, so a
// second transaction enqueuing the same key waits for tx to end before it
// decides: hold tx open briefly. The locks of unique keys, tenants and
// groups are taken together in key order before the jobs are written;
// a tx that holds other advisory locks or rows the store's own steps
// lock may deadlock with them (docs/postgres.md, "Lock order").
func (s *Store) EnqueueTx(ctx context.Context, tx pgx.Tx, specs ...queue.JobSpec) ([]queue.Enqueued, error) {
	return s.enqueueIn(ctx, pgxDB{tx}, specs)
}

// EnqueueSQLTx is EnqueueTx for a database/sql transaction on the pgx
// driver (github.com/jackc/pgx/v5/stdlib, driver name "pgx").
func (s *Store) EnqueueSQLTx(ctx context.Context, tx *sql.Tx, specs ...queue.JobSpec) ([]queue.Enqueued, error) {
	return s.enqueueIn(ctx, sqlDB{tx}, specs)
}

// enqueueIn checks specs as the Client would and stores them on db.
func (s *Store) enqueueIn(ctx context.Context, db execer, specs []queue.JobSpec) ([]queue.Enqueued, error) {
	if err := s.check("enqueue"); err != nil {
		return nil, err
	}
	specs, err := checkSpecs(s.Features(), specs)
	if err != nil {
		return nil, err
	}
	out, err := s.enqueueOn(s.newSched(ctx, db.(dbq), true), specs)
	if err == nil {
		err = s.notifyIn(ctx, db, readyQueues(out))
	}
	if err != nil {
		return nil, s.wrap("enqueue", err)
	}
	return out, nil
}

// notifyIn NOTIFYs each of qs inside the caller's transaction db, so
// workers everywhere learn of the jobs exactly when it commits, and never
// when it rolls back.
func (s *Store) notifyIn(ctx context.Context, db execer, qs []string) error {
	for _, q := range qs {
		if err := db.exec(ctx, s.q.notify, s.q.channel, q); err != nil {
			return err
		}
	}
	return nil
}

// checkSpecs validates specs as queue.Client does; sqlstore.NewJob fills their
// defaults.
func checkSpecs(f backend.Features, specs []queue.JobSpec) ([]queue.JobSpec, error) {
	for _, sp := range specs {
		if err := queue.ValidateSpec(sp, queue.DefaultMaxPayload); err != nil {
			return nil, err
		}
	}
	return specs, f.CheckSpecs(specs)
}

// enqueueOn stores specs in sc's transaction, one statement per spec,
// after taking the locks of all their unique keys and scopes in key
// order; the caller wakes the workers.
func (s *Store) enqueueOn(sc *sched, specs []queue.JobSpec) ([]queue.Enqueued, error) {
	now := s.now()
	sc.setNow(now)
	if err := sc.lockSpecs(specs); err != nil {
		return nil, err
	}
	out := make([]queue.Enqueued, len(specs))
	for i, sp := range specs {
		j := sqlstore.NewJob(sp, now)
		if sp.UniqueKey != "" {
			held, err := sc.lockUnique(sp.Queue, sp.UniqueKey)
			if err != nil {
				return nil, err
			}
			if held != nil {
				out[i] = queue.Enqueued{Job: held, Duplicate: true}
				continue
			}
		}
		var err error
		switch {
		case len(sp.DependsOn) > 0:
			err = sc.insertDependent(j, true)
		case scoped(sp):
			err = sc.insert(j, true)
		default:
			var id int64
			err = sc.db.queryRow(sc.ctx, s.q.insertOne, sqlstore.InsertArgs(j)...).Scan(&id)
			j.ID = strconv.FormatInt(id, 10)
		}
		if err != nil {
			return nil, err
		}
		out[i] = queue.Enqueued{Job: j}
	}
	return out, nil
}

// pgxRows is what pgx.Tx and *pgxpool.Pool have for reading rows.
type pgxRows interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// insertPlain inserts jobs, none with a unique key, in one statement
// (insertOne for one job, insertMany for more) and returns their ids.
func (s *Store) insertPlain(ctx context.Context, db pgxRows, jobs []*queue.Job, now int64) ([]int64, error) {
	if len(jobs) == 1 {
		ids := make([]int64, 1)
		return ids, db.QueryRow(ctx, s.q.insertOne, sqlstore.InsertArgs(jobs[0])...).Scan(&ids[0])
	}
	rows, err := db.Query(ctx, s.q.insertMany, manyArgs(jobs, now)...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// enqueueBatch stores specs without unique keys in one INSERT: one
// round trip and one implicit transaction.
func (s *Store) enqueueBatch(ctx context.Context, specs []queue.JobSpec) ([]queue.Enqueued, error) {
	now := s.now()
	jobs := make([]*queue.Job, len(specs))
	out := make([]queue.Enqueued, len(specs))
	for i, sp := range specs {
		jobs[i] = sqlstore.NewJob(sp, now)
		out[i] = queue.Enqueued{Job: jobs[i]}
	}
	ids, err := s.insertPlain(ctx, s.pool, jobs, now)
	if err == nil && len(ids) != len(jobs) {
		err = errors.New("insert returned a wrong number of ids")
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(ids)
	for i, j := range jobs {
		j.ID = strconv.FormatInt(ids[i], 10)
	}
	return out, nil
}

func hasUnique(specs []queue.JobSpec) bool {
	for _, sp := range specs {
		if sp.UniqueKey != "" {
			return true
		}
	}
	return false
}

// readyQueues lists, once each, the queues of the new pending jobs.
func readyQueues(out []queue.Enqueued) []string {
	var qs []string
	for _, e := range out {
		if !e.Duplicate && e.Job.State == queue.StatePending && !slices.Contains(qs, e.Job.Queue) {
			qs = append(qs, e.Job.Queue)
		}
	}
	return qs
}

// manyArgs are the arguments of insertMany for jobs: one array per column.
func manyArgs(jobs []*queue.Job, now int64) []any {
	n := len(jobs)
	var (
		qs, kinds, tenants, grps, states, hooks, traces = make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		payloads         = make([][]byte, n)
		prios, attempts  = make([]int32, n), make([]int32, n)
		runAts, timeouts = make([]int64, n), make([]int64, n)
	)
	for i, j := range jobs {
		qs[i], kinds[i], payloads[i], tenants[i], grps[i] = j.Queue, j.Kind, j.Payload, j.Tenant, j.Group
		prios[i], runAts[i], attempts[i], timeouts[i] = int32(j.Priority), sqlstore.ToNanos(j.RunAt), int32(j.MaxAttempts), int64(j.Timeout)
		states[i], hooks[i], traces[i] = string(j.State), backend.EncodeWebhook(j.Webhook), j.Trace
	}
	return []any{qs, kinds, payloads, tenants, grps, prios, runAts, attempts, timeouts, states, hooks, traces, now}
}
