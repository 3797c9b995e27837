package pgqueue

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/queue"
)

// Get implements queue.Backend.
func (s *Store) Get(ctx context.Context, id string) (*queue.Job, error) {
	rid, err := parseID(id)
	if err != nil {
		return nil, err
	}
	if err := s.check("get"); err != nil {
		return nil, err
	}
	j, err := s.getWithProgress(ctx, rid)
	if isNoRows(err) {
		return nil, queue.ErrNotFound
	}
	return j, s.wrap("get", err)
}

// Stats implements queue.Backend, counting from the (queue, state) index.
func (s *Store) Stats(ctx context.Context) ([]queue.QueueStats, error) {
	if err := s.check("stats"); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, s.q.stats)
	if err != nil {
		return nil, s.wrap("stats", err)
	}
	defer rows.Close()
	byQueue := map[string]map[queue.State]int64{}
	for rows.Next() {
		var q, st string
		var n int64
		if err := rows.Scan(&q, &st, &n); err != nil {
			return nil, s.wrap("stats", err)
		}
		if byQueue[q] == nil {
			byQueue[q] = map[queue.State]int64{}
		}
		byQueue[q][queue.State(st)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("stats", err)
	}
	paused, err := s.queuePauses(ctx)
	if err != nil {
		return nil, s.wrap("stats", err)
	}
	for q := range paused {
		if byQueue[q] == nil {
			byQueue[q] = map[queue.State]int64{}
		}
	}
	out := make([]queue.QueueStats, 0, len(byQueue))
	for q, c := range byQueue {
		out = append(out, queue.QueueStats{Queue: q, Counts: c, PausedUntil: fromNanos(paused[q])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Queue < out[j].Queue })
	return out, nil
}

// Cancel implements queue.Backend in one statement on a job that has not
// finished; a finished or missing job is only read.
func (s *Store) Cancel(ctx context.Context, id string) (*queue.Job, error) {
	rid, err := parseID(id)
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
		j, err = scanJob(s.pool.QueryRow(ctx, s.q.cancel, rid, s.now()))
	}
	if isNoRows(err) {
		j, err = s.Get(ctx, id)
	}
	if err != nil {
		return nil, s.wrap("cancel", err)
	}
	if j.State == queue.StateCompleted || j.State == queue.StateFailed {
		return j, queue.ErrJobFinished
	}
	return j, nil
}

// RescueExpired implements queue.Backend in one transaction: the expired
// jobs are locked with SKIP LOCKED, so rescuers running at once share the
// work and each job is rescued once per expiry; their updates go in one
// batch.
func (s *Store) RescueExpired(ctx context.Context, req queue.RescueRequest) (queue.RescueResult, error) {
	maxStalls := req.MaxStalls
	if maxStalls <= 0 {
		maxStalls = queue.DefaultMaxStalls
	}
	limit := req.Limit
	if limit <= 0 {
		limit = queue.DefaultBatchLimit
	}
	queues := req.Queues
	if queues == nil {
		queues = []string{}
	}
	now := s.now()
	var res queue.RescueResult
	requeued := map[string]bool{}
	err := s.tx(ctx, "rescue", func(tx pgx.Tx) error {
		res = queue.RescueResult{}
		rows, err := tx.Query(ctx, s.q.rescueSelect, now, queues, limit)
		if err != nil {
			return err
		}
		expired, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*queue.Job, error) { return scanJob(r) })
		if err != nil || len(expired) == 0 {
			return err
		}
		b := &pgx.Batch{}
		scopedArgs := make([][]any, len(expired))
		for i, j := range expired {
			next, args, err := rescueArgs(j, now, maxStalls)
			if err != nil {
				return err
			}
			if j.Tenant != "" || j.Group != "" {
				scopedArgs[i] = args // updated one by one as they are placed
			} else {
				b.Queue(s.q.rescueUpdate, args...)
			}
			switch next {
			case queue.StatePending:
				res.Requeued++
				requeued[j.Queue] = true
			case queue.StateFailed:
				res.Failed++
			case queue.StateCancelled:
				res.Cancelled++
			}
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		if err := s.settleRescued(ctx, tx, expired, scopedArgs); err != nil {
			return err
		}
		if res.Failed+res.Cancelled == 0 {
			return nil
		}
		// A parent that failed or was cancelled here may have cancelled
		// the last jobs of its children's groups.
		sc := s.newSched(ctx, pgxDB{tx})
		if err := sc.settleCascade(queue.StateFailed); err != nil {
			return err
		}
		return sc.notify()
	})
	if err != nil {
		return queue.RescueResult{}, err
	}
	for q := range requeued {
		s.wake(q)
	}
	return res, nil
}

// rescueArgs decides what becomes of one expired job and returns the
// arguments of rescueUpdate.
func rescueArgs(j *queue.Job, now int64, maxStalls int) (queue.State, []any, error) {
	id, _ := parseID(j.ID)
	stalls := j.Stalls + 1
	switch {
	case j.CancelRequested:
		return queue.StateCancelled, []any{string(queue.StateCancelled), "", "", now, now, id}, nil
	case stalls >= maxStalls:
		msg := fmt.Sprintf("queue: job stalled %d times (its lease expired before the worker finished)", stalls)
		hist, err := appendError(j.Errors, queue.AttemptError{Attempt: j.Attempt, At: fromNanos(now), Error: msg})
		return queue.StateFailed, []any{string(queue.StateFailed), msg, hist, now, now, id}, err
	default:
		return queue.StatePending, []any{string(queue.StatePending), "", "", int64(0), now, id}, nil
	}
}

// Cleanup implements queue.Backend: per final state, one DELETE of the
// oldest expired jobs of no group, then those of groups (cleanGroups).
func (s *Store) Cleanup(ctx context.Context, req queue.CleanupRequest) (int, error) {
	limit := req.Limit
	if limit <= 0 {
		limit = queue.DefaultBatchLimit
	}
	if err := s.check("cleanup"); err != nil {
		return 0, err
	}
	now := s.now()
	deleted := 0
	for _, st := range []queue.State{queue.StateCompleted, queue.StateFailed, queue.StateCancelled} {
		keep, _ := req.Retention.For(st)
		if keep < 0 || deleted >= limit {
			continue
		}
		cutoff := now - int64(keep)
		var err error
		var n int64
		if len(req.Queues) == 0 {
			n, err = s.execN(ctx, s.q.cleanupAll, string(st), cutoff, limit-deleted)
		} else {
			n, err = s.execN(ctx, s.q.cleanup, string(st), cutoff, req.Queues, limit-deleted)
		}
		if err != nil {
			return deleted, s.wrap("cleanup", err)
		}
		deleted += int(n)
	}
	n, err := s.cleanGroups(ctx, req, now, limit-deleted)
	return deleted + n, err
}

// execN runs a statement on the pool and returns the rows it affected.
func (s *Store) execN(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := s.pool.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

// Retry implements queue.Retrier: a failed or cancelled job becomes
// pending with fresh attempts, unless another job holds its unique key.
func (s *Store) Retry(ctx context.Context, id string) (*queue.Job, error) {
	rid, err := parseID(id)
	if err != nil {
		return nil, err
	}
	now := s.now()
	var j *queue.Job
	err = s.tx(ctx, "retry", func(tx pgx.Tx) error {
		var q, state, grp, tenant string
		var key *string
		var priority int
		var hasTag bool
		err := tx.QueryRow(ctx, s.q.retryRow, rid).Scan(&q, &state, &grp, &key, &tenant, &priority, &hasTag)
		if isNoRows(err) {
			return queue.ErrNotFound
		} else if err != nil {
			return err
		}
		if err := retryable(id, queue.State(state), grp); err != nil {
			return err
		}
		if err := s.parentsDone(ctx, tx, id, rid, queue.State(state)); err != nil {
			return err
		}
		if key != nil {
			holder, err := s.lockUnique(ctx, pgxDB{tx}, q, *key, now)
			if err != nil {
				return err
			}
			if holder != nil && holder.ID != id {
				return &queue.DuplicateError{ID: id, Holder: holder.ID, Queue: q, Key: *key}
			}
		}
		if _, err := tx.Exec(ctx, s.q.retryReset, now, rid); err != nil {
			return err
		}
		if err := s.placeRetried(ctx, tx, rid, q, tenant, priority, hasTag); err != nil {
			return err
		}
		j, err = scanJob(tx.QueryRow(ctx, s.q.get, rid))
		return err
	})
	if err != nil {
		return nil, err
	}
	s.wake(j.Queue)
	return j, nil
}

// parentsDone refuses to retry flow job id while a parent holds it back
// (queue.Retrier).
func (s *Store) parentsDone(ctx context.Context, tx pgx.Tx, id string, rid int64, st queue.State) error {
	var pid int64
	var state string
	err := tx.QueryRow(ctx, s.q.retryParent, rid).Scan(&pid, &state)
	if isNoRows(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return &queue.NotRetryableError{ID: id, State: st, Parent: strconv.FormatInt(pid, 10), ParentState: queue.State(state)}
}

// retryable returns a *queue.NotRetryableError unless a job in state and
// group may be retried.
func retryable(id string, state queue.State, grp string) error {
	if state != queue.StateFailed && state != queue.StateCancelled {
		return &queue.NotRetryableError{ID: id, State: state}
	}
	if grp != "" {
		return &queue.NotRetryableError{ID: id, State: state, Group: grp}
	}
	return nil
}
