package pgqueue

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// Get implements backend.Backend.
func (s *Store) Get(ctx context.Context, id string) (*queue.Job, error) {
	rid, err := sqlstore.ParseID(id)
	if err != nil {
		return nil, err
	}
	if err := s.check("get"); err != nil {
		return nil, err
	}
	j, err := s.getWithProgress(ctx, rid)
	return j, s.wrap("get", err)
}

// Stats implements backend.Backend, counting from the (queue, state) index.
func (s *Store) Stats(ctx context.Context) ([]queue.QueueStats, error) {
	if err := s.check("stats"); err != nil {
		return nil, err
	}
	paused, err := s.queuePauses(ctx)
	if err != nil {
		return nil, s.wrap("stats", err)
	}
	out, err := sqlstore.QueueStats(onPgx{ctx, s.pool}, s.q.stats, paused)
	return out, s.wrap("stats", err)
}

// Cancel implements backend.Backend in one statement on a job that has not
// finished; a finished or missing job is only read.
func (s *Store) Cancel(ctx context.Context, id string) (*queue.Job, error) {
	rid, err := sqlstore.ParseID(id)
	if err != nil {
		return nil, err
	}
	if err := s.check("cancel"); err != nil {
		return nil, err
	}
	var j *queue.Job
	// A parent's cancel may cancel its children's groups' last jobs: it
	// settles them in a transaction, as a job of a tenant or group.
	tenant, grp, parent, _, err := s.scopesOf(ctx, rid)
	if err == nil && (tenant != "" || grp != "" || parent) {
		j, err = s.cancelScoped(ctx, rid)
	} else if err == nil {
		j, err = sqlstore.ScanJob(s.pool.QueryRow(ctx, s.q.cancel, rid, s.now()))
	}
	if isNoRows(err) {
		j, err = s.Get(ctx, id)
	}
	if err != nil {
		return nil, s.wrap("cancel", err)
	}
	return sqlstore.CancelFinished(j)
}

// RescueExpired implements backend.Backend in one transaction: the expired
// jobs are locked with SKIP LOCKED, so rescuers running at once share the
// work and each job is rescued once per expiry; their updates go in one
// batch. The scopes of the expired jobs of tenants or groups are locked
// first, before any job (see stepLocks).
func (s *Store) RescueExpired(ctx context.Context, req backend.RescueRequest) (backend.RescueResult, error) {
	limit, maxStalls := sqlstore.RescueLimits(req)
	queues := req.Queues
	if queues == nil {
		queues = []string{}
	}
	now := s.now()
	var res backend.RescueResult
	var requeued map[string]bool
	err := s.schedTx(ctx, "rescue", func(sc *sched) error {
		sc.setNow(now)
		var err error
		res, requeued, err = s.rescue(sc, queues, limit, maxStalls)
		return err
	})
	if err != nil {
		return backend.RescueResult{}, err
	}
	for q := range requeued {
		s.wake(q)
	}
	return res, nil
}

// qExpiredScopes lists the scopes of the jobs rescueSelect would take,
// without locking them.
const qExpiredScopes = `SELECT tenant, grp FROM __schema__.jobs WHERE state = 'active' AND lease_until < $1
	AND (cardinality($2::text[]) = 0 OR queue = ANY($2)) AND (tenant <> '' OR grp <> '') ORDER BY lease_until LIMIT $3`

// rescue is RescueExpired's step.
func (s *Store) rescue(sc *sched, queues []string, limit, maxStalls int) (backend.RescueResult, map[string]bool, error) {
	if err := sc.lockExpiredScopes(queues, limit); err != nil {
		return backend.RescueResult{}, nil, err
	}
	expired, err := sqlstore.ScanJobs(sc.db.query(sc.ctx, s.q.rescueSelect, sc.now, queues, limit))
	if err != nil || len(expired) == 0 {
		return backend.RescueResult{}, nil, err
	}
	b := &pgx.Batch{}
	scopedArgs := make([][]any, len(expired))
	res, requeued, err := sqlstore.RescueJobs(expired, sc.now, maxStalls, func(i int, j *queue.Job, r sqlstore.Stalled) error {
		finished := sc.now
		if r.Next == queue.StatePending {
			finished = 0
		}
		args := []any{string(r.Next), r.Error, r.Errors, finished, sc.now, mustID(j.ID)}
		if j.Tenant != "" || j.Group != "" {
			scopedArgs[i] = args // updated one by one as they are placed
		} else {
			b.Queue(s.q.rescueUpdate, args...)
		}
		return nil
	})
	if err != nil {
		return res, nil, err
	}
	if err := sc.tx().SendBatch(sc.ctx, b).Close(); err != nil {
		return res, nil, err
	}
	if err := sc.settleRescued(expired, scopedArgs); err != nil {
		return res, nil, err
	}
	if res.Failed+res.Cancelled > 0 {
		// A parent that failed or was cancelled here may have cancelled
		// the last jobs of its children's groups.
		if err := sc.settleCascade(queue.StateFailed); err != nil {
			return res, nil, err
		}
	}
	return res, requeued, nil
}

// lockExpiredScopes locks the scopes of the expired jobs a rescue will
// take, as they are now.
func (sc *sched) lockExpiredScopes(queues []string, limit int) error {
	rows, err := sc.peekRows(qExpiredScopes, sc.now, queues, limit)
	if err != nil {
		return err
	}
	var keys []int64
	for rows.Next() {
		var t, g string
		if err := rows.Scan(&t, &g); err != nil {
			rows.Close()
			return err
		}
		keys = sc.scopeKeys(keys, t, g)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	return sc.lockKeys(keys)
}

// Cleanup implements backend.Backend: per final state, one DELETE of the
// oldest expired jobs of no group, then those of groups (cleanGroups).
func (s *Store) Cleanup(ctx context.Context, req backend.CleanupRequest) (int, error) {
	if err := s.check("cleanup"); err != nil {
		return 0, err
	}
	now := s.now()
	deletes, queueArgs := []string{s.q.cleanupAll}, []any(nil)
	if len(req.Queues) > 0 {
		deletes, queueArgs = []string{s.q.cleanup}, []any{req.Queues}
	}
	deleted, err := sqlstore.CleanupJobs(onPgx{ctx, s.pool}, deletes, queueArgs, req, now)
	if err != nil {
		return deleted, s.wrap("cleanup", err)
	}
	limit := req.Limit
	if limit <= 0 {
		limit = backend.DefaultBatchLimit
	}
	n, err := s.cleanGroups(ctx, req, now, limit-deleted)
	return deleted + n, err
}

// execN runs a statement on the pool and returns the rows it affected.
func (s *Store) execN(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := s.pool.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

// Retry implements backend.Retrier: a failed or cancelled job becomes
// pending with fresh attempts, unless another job holds its unique key.
// Its tenant's and unique key's locks are taken first, before its row.
func (s *Store) Retry(ctx context.Context, id string) (*queue.Job, error) {
	rid, err := sqlstore.ParseID(id)
	if err != nil {
		return nil, err
	}
	now := s.now()
	var j *queue.Job
	err = s.schedTx(ctx, "retry", func(sc *sched) error {
		sc.setNow(now)
		var err error
		j, err = sc.retry(id, rid)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.wake(j.Queue)
	return j, nil
}

// retry is Retry's step.
func (sc *sched) retry(id string, rid int64) (*queue.Job, error) {
	s := sc.s
	var q, tenant string
	var key *string
	err := sc.peek(`SELECT queue, tenant, unique_key FROM __schema__.jobs WHERE id = $1`, rid).Scan(&q, &tenant, &key)
	if isNoRows(err) {
		return nil, queue.ErrNotFound
	} else if err != nil {
		return nil, err
	}
	keys := sc.scopeKeys(nil, tenant, "")
	if key != nil {
		k, err := sc.uniqueKeys([]uniqueName{{q, *key}})
		if err != nil {
			return nil, err
		}
		keys = append(keys, k...)
	}
	if err := sc.lockKeys(keys); err != nil {
		return nil, err
	}
	var state, grp string
	var priority int
	var hasTag bool
	err = sc.db.queryRow(sc.ctx, s.q.retryRow, rid).Scan(&q, &state, &grp, &key, &tenant, &priority, &hasTag)
	if isNoRows(err) {
		return nil, queue.ErrNotFound
	} else if err != nil {
		return nil, err
	}
	parent := func() sqlstore.Row { return sc.db.queryRow(sc.ctx, s.q.retryParent, rid) }
	if err := sqlstore.RetryChecks(id, q, queue.State(state), grp, key, parent, sc.lockUnique); err != nil {
		return nil, err
	}
	if err := sc.db.exec(sc.ctx, s.q.retryReset, sc.now, rid, state); err != nil {
		return nil, err
	}
	if err := sc.placeRetried(placing{id: rid, queue: q, tenant: tenant, priority: priority, hasTag: hasTag, from: state}); err != nil {
		return nil, err
	}
	return sqlstore.ScanJob(sc.db.queryRow(sc.ctx, s.q.get, rid))
}
