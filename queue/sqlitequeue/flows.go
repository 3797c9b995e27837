package sqlitequeue

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
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
	qChildRefs = hot(`SELECT c.id, c.queue, c.kind, c.state, c.flow_node, NULL FROM job_deps d
		JOIN jobs c ON c.id = d.child WHERE d.parent = ? ORDER BY c.id`)
	qMoved = hot(`SELECT f.id, j.state, j.queue, j.tenant, j.grp, j.priority, j.vstart, j.run_at
		FROM flow_moved f JOIN jobs j ON j.id = f.id ORDER BY f.id LIMIT 1000`)
	qMovedGone = hot(`DELETE FROM flow_moved WHERE id NOT IN (SELECT id FROM jobs)`)
	qMovedDone = hot(`DELETE FROM flow_moved WHERE id = ?`)
)

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
// state (see sqlstore.ReadDeps); a job deeper than MaxFlowDepth is
// refused. It returns nil for a job without parents.
func (s *sched) depsOf(j *queue.Job) (*sqlstore.FlowDeps, error) {
	d, err := sqlstore.ReadDeps(j, func(ids []int64) (map[int64]sqlstore.FlowParent, error) {
		out := make(map[int64]sqlstore.FlowParent, len(ids))
		for _, pid := range ids {
			var p sqlstore.FlowParent
			err := s.tx.queryRow(qParent, pid).Scan(&p.State, &p.Depth)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			} else if err != nil {
				return nil, err
			}
			out[pid] = p
		}
		return out, nil
	})
	if d != nil && d.Depth > MaxFlowDepth {
		return nil, backend.InvalidArgument(queue.Field("JobSpec", "DependsOn"),
			"would give the job %d generations of parents; the SQLite store settles at most %d (sqlitequeue.MaxFlowDepth)", d.Depth, MaxFlowDepth)
	}
	return d, err
}

// linkDeps stores the edges of new job id and its own flow columns.
func (s *sched) linkDeps(id int64, j *queue.Job, d *sqlstore.FlowDeps) error {
	if d == nil {
		return nil
	}
	run := 0
	if j.OnParentFailure == queue.ParentFailureRun {
		run = 1
	}
	for _, p := range d.Parents {
		if _, err := s.tx.exec(qAddDep, p, id, run); err != nil {
			return err
		}
	}
	var finished int64
	if j.State == queue.StateCancelled {
		finished = s.now
	}
	_, err := s.tx.exec(qLinkJob, strings.Join(j.DependsOn, ","), string(j.OnParentFailure), d.Left,
		d.CancelledBy, j.LastError, finished, d.Depth, id)
	return err
}

// EnqueueFlow implements backend.FlowBackend.
func (b *Backend) EnqueueFlow(ctx context.Context, p backend.FlowPlan) ([]*queue.Job, error) {
	var out []*queue.Job
	err := b.writeSched(ctx, "enqueue flow", func(s *sched) error {
		if _, err := s.tx.exec(qAddFlow, p.ID, p.Name, s.now); err != nil {
			return err
		}
		var err error
		out, err = sqlstore.FlowNodes(p, func(spec queue.JobSpec, name string) (*queue.Job, bool, error) {
			j, dup, err := s.insertSpec(spec, true)
			if err != nil || dup {
				return j, dup, err
			}
			j.Flow, j.FlowNode = p.ID, name
			_, err = s.tx.exec(qFlowJob, p.ID, name, j.ID)
			return j, false, err
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// flowQ are the statements of reading flows.
var flowQ = &sqlstore.FlowStatements{Flow: qFlowRow, Jobs: qFlowJobs, Exists: `SELECT EXISTS (SELECT 1 FROM jobs WHERE id = ?)`,
	Parents: qParentRefs, Children: qChildRefs}

// Flow implements backend.FlowBackend.
func (b *Backend) Flow(ctx context.Context, id string) (*queue.Flow, error) {
	if b.closed.Load() {
		return nil, b.wrap("flow", queue.ErrClosed)
	}
	f, err := sqlstore.ReadFlow(sqlstore.OnSQL{Ctx: ctx, Q: b.r}, flowQ, id)
	return f, b.wrap("flow", err)
}

// Relatives implements backend.FlowBackend. It reads in one read
// transaction, so parents and children are of one moment.
func (b *Backend) Relatives(ctx context.Context, id string, maxResults int) (*queue.Relatives, error) {
	rid, err := sqlstore.ParseID(id)
	if err != nil {
		return nil, err
	}
	if b.closed.Load() {
		return nil, b.wrap("relatives", queue.ErrClosed)
	}
	var rel *queue.Relatives
	err = b.read(ctx, func(tx *sql.Tx) error {
		rel, err = sqlstore.ReadRelatives(sqlstore.OnSQL{Ctx: ctx, Q: tx}, flowQ, rid, maxResults)
		return err
	})
	return rel, b.wrap("relatives", err)
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
