package sqlitequeue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// Flows: the edges are rows of job_deps, and the triggers of
// migrations/0007_flows.sql settle a parent's children in the statement
// that ends it, whichever transition that is. This file stores the edges
// and reads the graph.

var (
	qLinkJob = hot(`UPDATE jobs SET depends_on = ?, on_parent_failure = ?, deps_left = ?,
		cancelled_by = ?, last_error = ?, finished_at = ?, flow_depth = ? WHERE id = ?`)
	qParent     = hot(`SELECT state, flow_depth FROM jobs WHERE id = ?`)
	qAddDep     = hot(`INSERT OR IGNORE INTO job_deps (parent, child, run) VALUES (?, ?, ?)`)
	qFlowJob    = hot(`UPDATE jobs SET flow = ?, flow_node = ? WHERE id = ?`)
	qAddFlow    = hot(`INSERT INTO flows (id, name, created_at) VALUES (?, ?, ?)`)
	qFlowRow    = hot(`SELECT name, created_at FROM flows WHERE id = ?`)
	qFlowJobs   = hot(`SELECT ` + jobCols + ` FROM jobs WHERE flow = ? AND flow != '' ORDER BY id`)
	qParentRefs = hot(`SELECT p.id, p.queue, p.kind, p.state, p.flow_node, p.result FROM job_deps d
		JOIN jobs p ON p.id = d.parent WHERE d.child = ? ORDER BY p.id`)
	qChildRefs = hot(`SELECT c.id, c.queue, c.kind, c.state, c.flow_node FROM job_deps d
		JOIN jobs c ON c.id = d.child WHERE d.parent = ? ORDER BY c.id`)
	qMoved = hot(`SELECT f.id, j.state, j.queue, j.tenant, j.grp, j.priority, j.vstart, j.run_at
		FROM flow_moved f JOIN jobs j ON j.id = f.id ORDER BY f.id LIMIT 1000`)
	qMovedGone = hot(`DELETE FROM flow_moved WHERE id NOT IN (SELECT id FROM jobs)`)
	qMovedDone = hot(`DELETE FROM flow_moved WHERE id = ?`)
)

// deps is what a new job's parents make of it (sched.depsOf).
type deps struct {
	parents     []int64
	left        int64  // parents not ended yet
	cancelledBy int64  // the ended parent that cancels it
	reason      string // why it was cancelled
	depth       int64  // generations of parents: one more than the deepest
}

// MaxFlowDepth bounds the generations of parents a job may have on this
// store: 900. A parent's end settles its children by triggers, one nested
// trigger per generation, and SQLite stops a statement whose triggers nest
// 1,000 deep, which would leave the job that ended it unable to end (a
// cancel or failure of the root of a deeper chain is refused as a whole).
// A job that would be deeper is refused at enqueue instead, an
// *InvalidArgumentError naming JobSpec.DependsOn. Postgres and Redis have
// no such bound.
const MaxFlowDepth = 900

// depsOf reads the parents of new job j (j.DependsOn) and decides its
// state: blocked while some have not ended; cancelled when one has failed
// or been cancelled and j does not run anyway; otherwise j keeps the state
// newJob gave it. A parent that is no job is an *InvalidArgumentError.
// It returns nil for a job without parents.
func (s *sched) depsOf(j *queue.Job) (*deps, error) {
	if len(j.DependsOn) == 0 {
		return nil, nil
	}
	d := &deps{}
	for _, id := range j.DependsOn {
		pid, err := parseID(id)
		var state string
		var depth int64
		if err == nil {
			err = s.tx.queryRow(qParent, pid).Scan(&state, &depth)
		}
		if errors.Is(err, queue.ErrNotFound) || errors.Is(err, sql.ErrNoRows) {
			return nil, &queue.InvalidArgumentError{Field: "JobSpec.DependsOn", Path: queue.Field("JobSpec", "DependsOn"),
				Rule: fmt.Sprintf("names no job: %q", id)}
		}
		if err != nil {
			return nil, err
		}
		d.parents = append(d.parents, pid)
		d.depth = max(d.depth, depth+1)
		switch st := queue.State(state); {
		case st == queue.StateCompleted:
		case st.Final():
			if j.OnParentFailure != queue.ParentFailureRun && d.cancelledBy == 0 {
				d.cancelledBy, d.reason = pid, parentReason(id, st)
			}
		default:
			d.left++
		}
	}
	if d.depth > MaxFlowDepth {
		return nil, &queue.InvalidArgumentError{Field: "JobSpec.DependsOn", Path: queue.Field("JobSpec", "DependsOn"),
			Rule: fmt.Sprintf("would give the job %d generations of parents; the SQLite store settles at most %d (sqlitequeue.MaxFlowDepth)", d.depth, MaxFlowDepth)}
	}
	switch {
	case d.cancelledBy != 0:
		j.State, j.LastError, j.FinishedAt = queue.StateCancelled, d.reason, j.CreatedAt
	case d.left > 0:
		j.State = queue.StateBlocked
	}
	return d, nil
}

// parentReason is the LastError of a job cancelled for its parent's end,
// the same words as the triggers write.
func parentReason(id string, st queue.State) string {
	if st == queue.StateFailed {
		return "parent job " + id + " failed"
	}
	return "parent job " + id + " was cancelled"
}

// linkDeps stores the edges of new job id and its own flow columns.
func (s *sched) linkDeps(id int64, j *queue.Job, d *deps) error {
	if d == nil {
		return nil
	}
	run := 0
	if j.OnParentFailure == queue.ParentFailureRun {
		run = 1
	}
	for _, p := range d.parents {
		if _, err := s.tx.exec(qAddDep, p, id, run); err != nil {
			return err
		}
	}
	var finished int64
	if j.State == queue.StateCancelled {
		finished = s.now
	}
	_, err := s.tx.exec(qLinkJob, strings.Join(j.DependsOn, ","), string(j.OnParentFailure), d.left,
		d.cancelledBy, j.LastError, finished, d.depth, id)
	return err
}

// EnqueueFlow implements backend.FlowBackend.
func (b *Backend) EnqueueFlow(ctx context.Context, p backend.FlowPlan) ([]*queue.Job, error) {
	out := make([]*queue.Job, len(p.Nodes))
	err := b.writeSched(ctx, "enqueue flow", func(s *sched) error {
		if _, err := s.tx.exec(qAddFlow, p.ID, p.Name, s.now); err != nil {
			return err
		}
		for i, n := range p.Nodes {
			spec := n.Spec
			spec.DependsOn = append([]string(nil), spec.DependsOn...)
			for _, k := range n.Parents {
				spec.DependsOn = append(spec.DependsOn, out[k].ID)
			}
			j, dup, err := s.insertSpec(spec, true)
			if err != nil {
				return backend.NodeError(i, n.Name, err)
			}
			if dup {
				return fmt.Errorf("node %q: unique key held by job %s: %w", n.Name, j.ID, queue.ErrDuplicate)
			}
			if _, err := s.tx.exec(qFlowJob, p.ID, n.Name, j.ID); err != nil {
				return err
			}
			j.Flow, j.FlowNode = p.ID, n.Name
			out[i] = j
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Flow implements backend.FlowBackend.
func (b *Backend) Flow(ctx context.Context, id string) (*queue.Flow, error) {
	if b.closed.Load() {
		return nil, b.wrap("flow", queue.ErrClosed)
	}
	f := &queue.Flow{ID: id}
	var created int64
	err := b.r.QueryRowContext(ctx, qFlowRow, id).Scan(&f.Name, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, queue.ErrFlowNotFound
	}
	if err != nil {
		return nil, b.wrap("flow", err)
	}
	f.CreatedAt = fromNanos(created)
	rows, err := b.r.QueryContext(ctx, qFlowJobs, id)
	if err != nil {
		return nil, b.wrap("flow", err)
	}
	defer rows.Close()
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, b.wrap("flow", err)
		}
		f.Jobs = append(f.Jobs, j)
	}
	return f, b.wrap("flow", rows.Err())
}

// Relatives implements backend.FlowBackend. It reads in one read
// transaction, so parents and children are of one moment.
func (b *Backend) Relatives(ctx context.Context, id string, maxResults int) (*queue.Relatives, error) {
	rid, err := parseID(id)
	if err != nil {
		return nil, err
	}
	if b.closed.Load() {
		return nil, b.wrap("relatives", queue.ErrClosed)
	}
	tx, err := b.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, b.wrap("relatives", err)
	}
	defer func() { _ = tx.Rollback() }()
	var state string
	if err := tx.QueryRowContext(ctx, qState, rid).Scan(&state); errors.Is(err, sql.ErrNoRows) {
		return nil, queue.ErrNotFound
	} else if err != nil {
		return nil, b.wrap("relatives", err)
	}
	rel := &queue.Relatives{}
	if rel.Parents, err = parentRefs(ctx, tx, rid, maxResults); err != nil {
		return nil, b.wrap("relatives", err)
	}
	if rel.Children, err = childRefs(ctx, tx, rid); err != nil {
		return nil, b.wrap("relatives", err)
	}
	return rel, nil
}

func parentRefs(ctx context.Context, tx *sql.Tx, id int64, budget int) ([]queue.ParentResult, error) {
	rows, err := tx.QueryContext(ctx, qParentRefs, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []queue.ParentResult
	for rows.Next() {
		var p queue.ParentResult
		var pid int64
		var st string
		if err := rows.Scan(&pid, &p.Queue, &p.Kind, &st, &p.FlowNode, &p.Result); err != nil {
			return nil, err
		}
		p.ID, p.State = strconv.FormatInt(pid, 10), queue.State(st)
		p.Result, p.Omitted, budget = backend.BoundResult(p.Result, budget)
		out = append(out, p)
	}
	return out, rows.Err()
}

func childRefs(ctx context.Context, tx *sql.Tx, id int64) ([]queue.JobRef, error) {
	rows, err := tx.QueryContext(ctx, qChildRefs, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []queue.JobRef
	for rows.Next() {
		var c queue.JobRef
		var cid int64
		var st string
		if err := rows.Scan(&cid, &c.Queue, &c.Kind, &st, &c.FlowNode); err != nil {
			return nil, err
		}
		c.ID, c.State = strconv.FormatInt(cid, 10), queue.State(st)
		out = append(out, c)
	}
	return out, rows.Err()
}

// settleMoved finishes, inside a write's transaction before it commits,
// what the triggers moved (they list the jobs in flow_moved): a released
// job that is due is promoted as Lease would (fair tag, tenant and group
// room) and its workers woken; a group whose last unfinished job a
// cascade cancelled completes.
func (b *Backend) settleMoved(t *wtx) error {
	// The write's own context may have ended; its writes are done and
	// must be settled all the same.
	t = &wtx{ctx: context.Background(), tx: t.tx, s: t.s}
	for {
		list, err := readMoved(t)
		if err != nil || len(list) == 0 {
			return err
		}
		s := b.newSched(t, b.now())
		for _, m := range list {
			if _, err := t.exec(qMovedDone, m.id); err != nil {
				return err
			}
			if err := s.settleOne(m); err != nil {
				return err
			}
		}
		if err := s.flush(); err != nil {
			return err
		}
	}
}

// moved is a row of flow_moved with its job's scheduling columns.
type moved struct {
	id, runAt int64
	state     queue.State
	q, t, g   string
	priority  int
	start     sql.NullInt64
}

func readMoved(t *wtx) ([]moved, error) {
	if _, err := t.exec(qMovedGone); err != nil {
		return nil, err
	}
	rows, err := t.query(qMoved)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []moved
	for rows.Next() {
		var m moved
		var st string
		if err := rows.Scan(&m.id, &st, &m.q, &m.t, &m.g, &m.priority, &m.start, &m.runAt); err != nil {
			return nil, err
		}
		m.state = queue.State(st)
		out = append(out, m)
	}
	return out, rows.Err()
}

// settleOne settles one moved job.
func (s *sched) settleOne(m moved) error {
	switch {
	case m.state == queue.StateScheduled && m.runAt <= s.now:
		return s.promote(m.id, m.q, m.t, m.g, m.priority, m.start)
	case m.state.Final():
		return s.settle(m.id)
	}
	return nil
}
