package pgqueue

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// Flows: the edges are rows of job_deps, and the triggers of
// migrations/0021_flows.sql settle a parent's children in the statement
// that ends it, whichever transition that is. This file stores new jobs
// with their parents and reads the graph; flowsettle.go settles the
// groups a cascade touched.

var _ backend.FlowBackend = (*Store)(nil)

const (
	// qLockParents reads the parents' states under a row lock, in id order,
	// so a parent cannot end between the read and the commit of the edges:
	// the trigger of its end sees them. The lock is the one an UPDATE takes,
	// as the flag below is set under it.
	qLockParents = `SELECT id, state FROM __schema__.jobs WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`
	qMarkParents = `UPDATE __schema__.jobs SET has_children = true WHERE id = ANY($1) AND NOT has_children`
	qAddDeps     = `INSERT INTO __schema__.job_deps (parent, child, run)
		SELECT p, $2, $3 FROM unnest($1::bigint[]) AS p ON CONFLICT DO NOTHING`
	qFlowCols = `UPDATE __schema__.jobs SET flow = $1, flow_node = $2, depends_on = $3, on_parent_failure = $4 WHERE id = $5`
	// qInsertHeld stores a job that is not ready: blocked on its parents,
	// or cancelled by one. It takes no fair tag until it becomes ready.
	qInsertHeld = `INSERT INTO __schema__.jobs (queue, kind, payload, tenant, grp, priority, run_at, max_attempts,
		timeout, state, webhook, trace, created_at, updated_at, unique_key, unique_until,
		band, last_error, finished_at, flow, flow_node, depends_on, on_parent_failure, deps_left, cancelled_by)
		VALUES ($1, $2, $3, $4, $5, $6::int, $7, $8, $9, $10, $11, $12, $13, $13, $14, $15,
			$6::int, $16, $17, $18, $19, $20, $21, $22, $23)
		RETURNING id`
)

// depsOf reads the parents of new job j (j.DependsOn), locked, and
// decides its state (see sqlstore.ReadDeps), then marks them parents. It
// returns nil for a job without parents.
func (sc *sched) depsOf(j *queue.Job) (*sqlstore.FlowDeps, error) {
	d, err := sqlstore.ReadDeps(j, sc.parentStates)
	if d == nil || err != nil {
		return nil, err
	}
	return d, sc.exec(qMarkParents, d.Parents)
}

// parentStates locks the parents and reads their states.
func (sc *sched) parentStates(ids []int64) (map[int64]sqlstore.FlowParent, error) {
	rows, err := sc.rows(qLockParents, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[int64]sqlstore.FlowParent, len(ids))
	for rows.Next() {
		var id int64
		var st string
		if err := rows.Scan(&id, &st); err != nil {
			return nil, err
		}
		out[id] = sqlstore.FlowParent{State: queue.State(st)}
	}
	return out, rows.Err()
}

// insertDependent stores new job j (from sqlstore.NewJob, its unique key already
// free) that has parents or a flow: a job its parents leave ready is
// placed as any new job (insert, or the plain insert for a job of no
// tenant or group), then given its flow columns; a blocked or cancelled
// one is stored as it is. Its edges follow.
func (sc *sched) insertDependent(j *queue.Job, checkBacklog bool) error {
	d, err := sc.depsOf(j)
	if err != nil {
		return err
	}
	switch {
	case j.State == queue.StateBlocked || j.State == queue.StateCancelled:
		err = sc.insertHeld(j, d)
	case scoped(j.JobSpec):
		if err = sc.insert(j, checkBacklog); err == nil {
			err = sc.setFlowCols(j)
		}
	default:
		var id int64
		if err = sc.db.queryRow(sc.ctx, sc.s.q.insertOne, sqlstore.InsertArgs(j)...).Scan(&id); err == nil {
			j.ID = strconv.FormatInt(id, 10)
			err = sc.setFlowCols(j)
		}
	}
	if err != nil {
		return err
	}
	return sc.linkDeps(j, d)
}

// insertHeld stores a blocked or cancelled job, under its scopes' locks
// (its group must be open to take it).
func (sc *sched) insertHeld(j *queue.Job, d *sqlstore.FlowDeps) error {
	if err := sc.lockScopes(j.Tenant, j.Group); err != nil {
		return err
	}
	if err := sc.JoinGroup(j.Group); err != nil {
		return err
	}
	var left, by int64
	if d != nil {
		left, by = d.Left, d.CancelledBy
	}
	args := append(sqlstore.InsertArgs(j), j.LastError, sqlstore.ToNanos(j.FinishedAt), j.Flow, j.FlowNode,
		strings.Join(j.DependsOn, ","), string(j.OnParentFailure), left, by)
	var id int64
	if err := sc.row(qInsertHeld, args...).Scan(&id); err != nil {
		return err
	}
	j.ID = strconv.FormatInt(id, 10)
	return nil
}

// setFlowCols writes the flow columns of a job stored by a path that
// knows nothing of them.
func (sc *sched) setFlowCols(j *queue.Job) error {
	if j.Flow == "" && len(j.DependsOn) == 0 {
		return nil
	}
	return sc.exec(qFlowCols, j.Flow, j.FlowNode, strings.Join(j.DependsOn, ","), string(j.OnParentFailure), mustID(j.ID))
}

// linkDeps stores the edges of new job j.
func (sc *sched) linkDeps(j *queue.Job, d *sqlstore.FlowDeps) error {
	if d == nil {
		return nil
	}
	return sc.exec(qAddDeps, d.Parents, mustID(j.ID), j.OnParentFailure == queue.ParentFailureRun)
}

// EnqueueFlow implements backend.FlowBackend: the flow's row and every node,
// in one step, which locks every unique key and scope of the nodes first.
func (s *Store) EnqueueFlow(ctx context.Context, p backend.FlowPlan) ([]*queue.Job, error) {
	var out []*queue.Job
	specs := make([]queue.JobSpec, len(p.Nodes))
	for i, n := range p.Nodes {
		specs[i] = n.Spec
	}
	err := s.schedTx(ctx, "enqueue flow", func(sc *sched) error {
		if err := sc.lockSpecs(specs); err != nil {
			return err
		}
		if err := sc.exec(`INSERT INTO __schema__.flows (id, name, created_at) VALUES ($1, $2, $3)`, p.ID, p.Name, sc.now); err != nil {
			return err
		}
		var err error
		out, err = sqlstore.FlowNodes(p, func(spec queue.JobSpec, name string) (*queue.Job, bool, error) {
			return sc.enqueueNode(p.ID, name, spec)
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// enqueueNode stores spec as node name of flow id, or returns the job
// holding its unique key.
func (sc *sched) enqueueNode(id, name string, spec queue.JobSpec) (*queue.Job, bool, error) {
	if spec.UniqueKey != "" {
		held, err := sc.lockUnique(spec.Queue, spec.UniqueKey)
		if err != nil || held != nil {
			return held, held != nil, err
		}
	}
	j := sqlstore.NewJob(spec, sc.now)
	j.Flow, j.FlowNode = id, name
	if err := sc.insertDependent(j, true); err != nil {
		return nil, false, err
	}
	if j.State == queue.StatePending {
		sc.ReadyQueue(j.Queue)
	}
	return j, false, nil
}

// flowStatements are the statements of reading flows on schema.
func flowStatements(schema string) *sqlstore.FlowStatements {
	q := func(text string) string { return qualify(text, schema) }
	return &sqlstore.FlowStatements{
		Flow:   q(`SELECT name, created_at FROM __schema__.flows WHERE id = $1`),
		Jobs:   q(`SELECT ` + sqlstore.JobCols("") + ` FROM __schema__.jobs WHERE flow = $1 AND flow <> '' ORDER BY id`),
		Exists: q(`SELECT EXISTS (SELECT 1 FROM __schema__.jobs WHERE id = $1)`),
		Parents: q(`SELECT p.id, p.queue, p.kind, p.state, p.flow_node, p.result FROM __schema__.job_deps d
			JOIN __schema__.jobs p ON p.id = d.parent WHERE d.child = $1 ORDER BY p.id`),
		Children: q(`SELECT c.id, c.queue, c.kind, c.state, c.flow_node, NULL::bytea FROM __schema__.job_deps d
			JOIN __schema__.jobs c ON c.id = d.child WHERE d.parent = $1 ORDER BY c.id`),
	}
}

// Flow implements backend.FlowBackend.
func (s *Store) Flow(ctx context.Context, id string) (*queue.Flow, error) {
	if err := s.check("flow"); err != nil {
		return nil, err
	}
	if !queue.Storable(id) {
		return nil, queue.ErrFlowNotFound // never stored: see text.go
	}
	f, err := sqlstore.ReadFlow(onPgx{ctx, s.pool}, s.fq, id)
	return f, s.wrap("flow", err)
}

// Relatives implements backend.FlowBackend. It reads in one read-only
// transaction of one snapshot, so parents and children are of one moment.
func (s *Store) Relatives(ctx context.Context, id string, maxResults int) (*queue.Relatives, error) {
	rid, err := sqlstore.ParseID(id)
	if err != nil {
		return nil, err
	}
	if err := s.check("relatives"); err != nil {
		return nil, err
	}
	var rel *queue.Relatives
	opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	err = pgx.BeginTxFunc(ctx, s.pool, opts, func(tx pgx.Tx) error {
		rel, err = sqlstore.ReadRelatives(onPgx{ctx, tx}, s.fq, rid, maxResults)
		return err
	})
	return rel, s.wrap("relatives", err)
}
