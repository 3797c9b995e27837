package pgqueue

import (
	"context"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// The transitions of jobs of a tenant or group: the plain statements
// match only jobs without either, so these run when they matched nothing,
// in a transaction that locks the job's scopes first and settles after.

// completeScoped completes job id of a tenant or group, or classifies why
// it cannot.
func (s *Store) completeScoped(ctx context.Context, id int64, token string, result []byte) error {
	return s.schedTx(ctx, "complete", func(sc *sched) error {
		q, tenant, grp, ok, err := sc.jobScopes(id)
		if err != nil {
			return err
		}
		if !ok {
			return queue.ErrNotFound
		}
		var one int
		err = sc.row(`UPDATE __schema__.jobs SET state = 'completed', result = $1, finished_at = $2, updated_at = $2, `+clearLease+`
			WHERE id = $3 AND state = 'active' AND lease_token = $4 RETURNING 1`, result, sc.now, id, token).Scan(&one)
		if isNoRows(err) {
			return queue.ErrLeaseLost
		}
		if err != nil {
			return err
		}
		return sc.settle(id, q, tenant, grp, queue.StateCompleted)
	})
}

// giveBackScoped is giveBack for a job of a tenant or group: a job pending
// again is placed again and may wait.
func (s *Store) giveBackScoped(ctx context.Context, op string, id int64, token string, next queue.State, runAt int64) (queue.State, error) {
	var got string
	err := s.schedTx(ctx, op, func(sc *sched) error {
		q, tenant, grp, ok, err := sc.jobScopes(id)
		if err != nil {
			return err
		}
		if !ok {
			return queue.ErrNotFound
		}
		err = sc.row(qualify(`UPDATE __schema__.jobs SET
			state = CASE WHEN cancel_requested THEN 'cancelled' ELSE $1::text END,
			finished_at = CASE WHEN cancel_requested THEN $2::bigint ELSE 0 END,
			run_at = CASE WHEN cancel_requested THEN run_at ELSE $3::bigint END,
			attempt = attempt - 1, updated_at = $2, `+clearLease+`
			WHERE id = $4 AND state = 'active' AND lease_token = $5 RETURNING state`, s.schema),
			string(next), sc.now, runAt, id, token).Scan(&got)
		if isNoRows(err) {
			return queue.ErrLeaseLost
		}
		if err != nil {
			return err
		}
		if err := sc.settle(id, q, tenant, grp, queue.State(got)); err != nil {
			return err
		}
		return sc.row(`SELECT state FROM __schema__.jobs WHERE id = $1`, id).Scan(&got)
	})
	return queue.State(got), err
}

// cancelScoped is Cancel for a job of a tenant or group.
func (s *Store) cancelScoped(ctx context.Context, id int64) (*queue.Job, error) {
	var j *queue.Job
	err := s.schedTx(ctx, "cancel", func(sc *sched) error {
		q, tenant, grp, ok, err := sc.jobScopes(id)
		if err != nil {
			return err
		}
		if !ok {
			return queue.ErrNotFound
		}
		j, err = sqlstore.ScanJob(sc.db.queryRow(sc.ctx, s.q.cancel, id, sc.now))
		if isNoRows(err) {
			j, err = sqlstore.ScanJob(sc.db.queryRow(sc.ctx, s.q.get, id))
			return err
		}
		if err != nil {
			return err
		}
		return sc.settle(id, q, tenant, grp, j.State)
	})
	return j, err
}

// scopesOf reads a job's tenant and group without a lock (they never
// change), and whether it is a job's parent; ok is false when it does not
// exist.
func (s *Store) scopesOf(ctx context.Context, id int64) (tenant, grp string, parent, ok bool, err error) {
	err = s.pool.QueryRow(ctx, s.q.scopes, id).Scan(&tenant, &grp, &parent)
	if isNoRows(err) {
		return "", "", false, false, nil
	}
	return tenant, grp, parent, err == nil, err
}

// settleRescued rescues, in the rescue's step, the expired jobs of a
// tenant or group (args: their rescueUpdate arguments, nil for the others)
// as every store does (sqlstore's SettleRescued).
func (sc *sched) settleRescued(expired []*queue.Job, args [][]any) error {
	var list []*queue.Job
	argOf := map[*queue.Job][]any{}
	for i, j := range expired {
		if args[i] != nil {
			list = append(list, j)
			argOf[j] = args[i]
		}
	}
	return sc.SettleRescued(list, func(j *queue.Job) (queue.State, bool, error) {
		var st string
		err := sc.db.queryRow(sc.ctx, sc.s.q.rescueUpdate, argOf[j]...).Scan(&st)
		if isNoRows(err) {
			return "", false, nil // its row is locked: never so
		}
		return queue.State(st), err == nil, err
	})
}

// placeRetried makes a retried job ready as a due job is made ready
// (promotion): a job that never was ready (cancelled while scheduled, say)
// gets its first fair tag, and a tenant's job waits when its tenant has no
// room. A group's jobs are never retried.
func (sc *sched) placeRetried(p placing) error {
	_, err := sc.Place(sqlstore.Placing{ID: p.id, Queue: p.queue, Tenant: p.tenant, Grp: p.grp, Priority: p.priority,
		From: p.from, HasTag: p.hasTag})
	if err != nil {
		return err
	}
	return sc.FillTenant(p.tenant)
}

// placing is a retried job to make ready, as it was read.
type placing struct {
	id                 int64
	queue, tenant, grp string
	priority           int
	from               string // its state when read
	hasTag             bool
}
