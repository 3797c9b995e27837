package pgqueue

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
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

// deps is what a new job's parents make of it (depsOf).
type deps struct {
	parents     []int64
	left        int64  // parents not ended yet
	cancelledBy int64  // the ended parent that cancels it
	reason      string // why it was cancelled
}

// noJob is the error of a DependsOn id that names no job.
func noJob(id string) error {
	return backend.InvalidArgument(queue.Field("JobSpec", "DependsOn"), "names no job: %q", id)
}

// depsOf reads the parents of new job j (j.DependsOn), locked, and
// decides its state: blocked while some have not ended; cancelled when one
// has failed or been cancelled and j does not run anyway; otherwise j
// keeps the state newJob gave it. A parent that is no job is an
// *InvalidArgumentError. It returns nil for a job without parents.
func (sc *sched) depsOf(j *queue.Job) (*deps, error) {
	if len(j.DependsOn) == 0 {
		return nil, nil
	}
	d := &deps{parents: make([]int64, len(j.DependsOn))}
	for i, id := range j.DependsOn {
		n, err := parseID(id)
		if err != nil {
			return nil, noJob(id)
		}
		d.parents[i] = n
	}
	states, err := sc.parentStates(d.parents)
	if err != nil {
		return nil, err
	}
	for i, pid := range d.parents {
		st, ok := states[pid]
		switch {
		case !ok:
			return nil, noJob(j.DependsOn[i])
		case st == queue.StateCompleted:
		case st.Final():
			if j.OnParentFailure != queue.ParentFailureRun && d.cancelledBy == 0 {
				d.cancelledBy, d.reason = pid, parentReason(j.DependsOn[i], st)
			}
		default:
			d.left++
		}
	}
	if err := sc.exec(qMarkParents, d.parents); err != nil {
		return nil, err
	}
	switch {
	case d.cancelledBy != 0:
		j.State, j.LastError, j.FinishedAt = queue.StateCancelled, d.reason, j.CreatedAt
	case d.left > 0:
		j.State = queue.StateBlocked
	}
	return d, nil
}

// parentStates locks the parents and reads their states.
func (sc *sched) parentStates(ids []int64) (map[int64]queue.State, error) {
	rows, err := sc.rows(qLockParents, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[int64]queue.State, len(ids))
	for rows.Next() {
		var id int64
		var st string
		if err := rows.Scan(&id, &st); err != nil {
			return nil, err
		}
		out[id] = queue.State(st)
	}
	return out, rows.Err()
}

// parentReason is the LastError of a job cancelled for its parent's end,
// the same words as the trigger writes.
func parentReason(id string, st queue.State) string {
	if st == queue.StateFailed {
		return "parent job " + id + " failed"
	}
	return "parent job " + id + " was cancelled"
}

// insertDependent stores new job j (from newJob, its unique key already
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
		if err = sc.db.queryRow(sc.ctx, sc.s.q.insertOne, insertArgs(j)...).Scan(&id); err == nil {
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
func (sc *sched) insertHeld(j *queue.Job, d *deps) error {
	if err := sc.lockScopes(j.Tenant, j.Group); err != nil {
		return err
	}
	if err := sc.joinGroup(j.Group); err != nil {
		return err
	}
	var left, by int64
	if d != nil {
		left, by = d.left, d.cancelledBy
	}
	args := append(insertArgs(j), j.LastError, toNanos(j.FinishedAt), j.Flow, j.FlowNode,
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
func (sc *sched) linkDeps(j *queue.Job, d *deps) error {
	if d == nil {
		return nil
	}
	return sc.exec(qAddDeps, d.parents, mustID(j.ID), j.OnParentFailure == queue.ParentFailureRun)
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
		out = make([]*queue.Job, len(p.Nodes))
		if err := sc.lockSpecs(specs); err != nil {
			return err
		}
		if err := sc.exec(`INSERT INTO __schema__.flows (id, name, created_at) VALUES ($1, $2, $3)`, p.ID, p.Name, sc.now); err != nil {
			return err
		}
		for i, n := range p.Nodes {
			j, err := sc.enqueueNode(p.ID, n, out)
			if err != nil {
				return backend.NodeError(i, n.Name, err)
			}
			out[i] = j
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// enqueueNode stores node n of flow id; its parents in the flow are
// among done.
func (sc *sched) enqueueNode(id string, n backend.PlannedNode, done []*queue.Job) (*queue.Job, error) {
	spec := n.Spec
	spec.DependsOn = append([]string(nil), spec.DependsOn...)
	for _, k := range n.Parents {
		spec.DependsOn = append(spec.DependsOn, done[k].ID)
	}
	if spec.UniqueKey != "" {
		held, err := sc.lockUnique(spec.Queue, spec.UniqueKey)
		if err != nil {
			return nil, err
		}
		if held != nil {
			return nil, fmt.Errorf("unique key held by job %s: %w", held.ID, queue.ErrDuplicate)
		}
	}
	j := newJob(spec, sc.now)
	j.Flow, j.FlowNode = id, n.Name
	if err := sc.insertDependent(j, true); err != nil {
		return nil, err
	}
	if j.State == queue.StatePending {
		sc.readyQueue(j.Queue)
	}
	return j, nil
}

// Flow implements backend.FlowBackend.
func (s *Store) Flow(ctx context.Context, id string) (*queue.Flow, error) {
	if err := s.check("flow"); err != nil {
		return nil, err
	}
	if !queue.Storable(id) {
		return nil, queue.ErrFlowNotFound // never stored: see text.go
	}
	f := &queue.Flow{ID: id}
	var created int64
	err := s.pool.QueryRow(ctx, qualify(`SELECT name, created_at FROM __schema__.flows WHERE id = $1`, s.schema), id).
		Scan(&f.Name, &created)
	if isNoRows(err) {
		return nil, queue.ErrFlowNotFound
	}
	if err != nil {
		return nil, s.wrap("flow", err)
	}
	f.CreatedAt = fromNanos(created)
	rows, err := s.pool.Query(ctx, qualify(`SELECT `+jobCols("")+` FROM __schema__.jobs WHERE flow = $1 AND flow <> '' ORDER BY id`, s.schema), id)
	if err != nil {
		return nil, s.wrap("flow", err)
	}
	f.Jobs, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*queue.Job, error) { return scanJob(r) })
	if err != nil {
		return nil, s.wrap("flow", err)
	}
	return f, nil
}

const (
	qParentRefs = `SELECT p.id, p.queue, p.kind, p.state, p.flow_node, p.result FROM __schema__.job_deps d
		JOIN __schema__.jobs p ON p.id = d.parent WHERE d.child = $1 ORDER BY p.id`
	qChildRefs = `SELECT c.id, c.queue, c.kind, c.state, c.flow_node, NULL::bytea FROM __schema__.job_deps d
		JOIN __schema__.jobs c ON c.id = d.child WHERE d.parent = $1 ORDER BY c.id`
)

// Relatives implements backend.FlowBackend. It reads in one read-only
// transaction of one snapshot, so parents and children are of one moment.
func (s *Store) Relatives(ctx context.Context, id string, maxResults int) (*queue.Relatives, error) {
	rid, err := parseID(id)
	if err != nil {
		return nil, err
	}
	if err := s.check("relatives"); err != nil {
		return nil, err
	}
	rel := &queue.Relatives{}
	opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	err = pgx.BeginTxFunc(ctx, s.pool, opts, func(tx pgx.Tx) error {
		var ok bool
		if err := tx.QueryRow(ctx, s.q.exists, rid).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return queue.ErrNotFound
		}
		parents, err := s.refs(ctx, tx, qParentRefs, rid)
		if err != nil {
			return err
		}
		budget := maxResults
		for _, p := range parents {
			p.Result, p.Omitted, budget = backend.BoundResult(p.Result, budget)
			rel.Parents = append(rel.Parents, p)
		}
		children, err := s.refs(ctx, tx, qChildRefs, rid)
		for _, c := range children {
			rel.Children = append(rel.Children, c.JobRef)
		}
		return err
	})
	if err != nil {
		return nil, s.wrap("relatives", err)
	}
	return rel, nil
}

// refs reads the jobs a query of qParentRefs' columns lists.
func (s *Store) refs(ctx context.Context, tx pgx.Tx, query string, id int64) ([]queue.ParentResult, error) {
	rows, err := tx.Query(ctx, qualify(query, s.schema), id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (queue.ParentResult, error) {
		var p queue.ParentResult
		var rid int64
		var st string
		err := r.Scan(&rid, &p.Queue, &p.Kind, &st, &p.FlowNode, &p.Result)
		p.ID, p.State = strconv.FormatInt(rid, 10), queue.State(st)
		return p, err
	})
}
