package sqlstore

import (
	"fmt"
	"strconv"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// FlowDeps is what a new job's parents make of it.
type FlowDeps struct {
	// Parents are the parents' row ids, in the order of DependsOn.
	Parents []int64
	// Left counts the parents not ended yet.
	Left int64
	// CancelledBy is the ended parent that cancels the job (0: none),
	// and Reason why.
	CancelledBy int64
	Reason      string
	// Depth is the job's generations of parents: one more than its
	// deepest parent's.
	Depth int64
}

// FlowParent is what a new job's parent is, as a dialect reads it.
type FlowParent struct {
	State queue.State
	Depth int64 // its own generations of parents
}

// NoJob is the error of a DependsOn id that names no job.
func NoJob(id string) error {
	return backend.InvalidArgument(queue.Field("JobSpec", "DependsOn"), "names no job: %q", id)
}

// ReadDeps reads the parents of new job j (j.DependsOn) with read, which
// returns the parents it finds of the ids given, and decides j's state:
// blocked while some have not ended; cancelled when one has failed or
// been cancelled and j does not run anyway; otherwise the state NewJob
// gave it. A parent that is no job is an *InvalidArgumentError. It
// returns nil for a job without parents.
func ReadDeps(j *queue.Job, read func(ids []int64) (map[int64]FlowParent, error)) (*FlowDeps, error) {
	if len(j.DependsOn) == 0 {
		return nil, nil
	}
	d := &FlowDeps{Parents: make([]int64, len(j.DependsOn))}
	for i, id := range j.DependsOn {
		n, err := ParseID(id)
		if err != nil {
			return nil, NoJob(id)
		}
		d.Parents[i] = n
	}
	found, err := read(d.Parents)
	if err != nil {
		return nil, err
	}
	for i, pid := range d.Parents {
		p, ok := found[pid]
		switch {
		case !ok:
			return nil, NoJob(j.DependsOn[i])
		case p.State == queue.StateCompleted:
		case p.State.Final():
			if j.OnParentFailure != queue.ParentFailureRun && d.CancelledBy == 0 {
				d.CancelledBy, d.Reason = pid, ParentReason(j.DependsOn[i], p.State)
			}
		default:
			d.Left++
		}
		d.Depth = max(d.Depth, p.Depth+1)
	}
	switch {
	case d.CancelledBy != 0:
		j.State, j.LastError, j.FinishedAt = queue.StateCancelled, d.Reason, j.CreatedAt
	case d.Left > 0:
		j.State = queue.StateBlocked
	}
	return d, nil
}

// ParentReason is the LastError of a job cancelled for its parent's end,
// the same words as the dialects' triggers write.
func ParentReason(id string, st queue.State) string {
	if st == queue.StateFailed {
		return "parent job " + id + " failed"
	}
	return "parent job " + id + " was cancelled"
}

// FlowNodes stores the nodes of flow p in order with node, which stores
// one node's spec as a job of the flow and returns it, or returns the job
// that holds its unique key and dup = true: a flow is stored whole or not
// at all. A node's parents in the flow are added to its DependsOn; its
// error names the node.
func FlowNodes(p backend.FlowPlan, node func(spec queue.JobSpec, name string) (j *queue.Job, dup bool, err error)) ([]*queue.Job, error) {
	out := make([]*queue.Job, len(p.Nodes))
	for i, n := range p.Nodes {
		spec := n.Spec
		spec.DependsOn = append([]string(nil), spec.DependsOn...)
		for _, k := range n.Parents {
			spec.DependsOn = append(spec.DependsOn, out[k].ID)
		}
		j, dup, err := node(spec, n.Name)
		if err == nil && dup {
			err = fmt.Errorf("unique key held by job %s: %w", j.ID, queue.ErrDuplicate)
		}
		if err != nil {
			return nil, backend.NodeError(i, n.Name, err)
		}
		out[i] = j
	}
	return out, nil
}

// FlowStatements are a dialect's statements of reading flows
// (backend.FlowBackend).
type FlowStatements struct {
	// Flow returns name and created_at of flow $1; Jobs the JobCols of
	// its jobs by id.
	Flow, Jobs string
	// Exists returns whether job $1 exists.
	Exists string
	// Parents and Children return id, queue, kind, state, flow_node and
	// result (NULL for children) of job $1's parents and children, by id.
	Parents, Children string
}

// ReadFlow reads flow id and its jobs; ErrFlowNotFound when there is
// none.
func ReadFlow(tx Tx, st *FlowStatements, id string) (*queue.Flow, error) {
	f := &queue.Flow{ID: id}
	var created int64
	err := tx.QueryRow(st.Flow, id).Scan(&f.Name, &created)
	if IsNoRows(err) {
		return nil, queue.ErrFlowNotFound
	}
	if err != nil {
		return nil, err
	}
	f.CreatedAt = FromNanos(created)
	f.Jobs, err = ScanJobs(tx.Query(st.Jobs, id))
	if err != nil {
		return nil, err
	}
	return f, nil
}

// ReadRelatives reads the parents (with their results, within
// maxResults bytes in all) and children of job rid; tx is one snapshot,
// so both are of one moment.
func ReadRelatives(tx Tx, st *FlowStatements, rid int64, maxResults int) (*queue.Relatives, error) {
	var ok bool
	if err := tx.QueryRow(st.Exists, rid).Scan(&ok); err != nil {
		return nil, err
	}
	if !ok {
		return nil, queue.ErrNotFound
	}
	rel := &queue.Relatives{}
	parents, err := refs(tx, st.Parents, rid)
	if err != nil {
		return nil, err
	}
	budget := maxResults
	for _, p := range parents {
		p.Result, p.Omitted, budget = backend.BoundResult(p.Result, budget)
		rel.Parents = append(rel.Parents, p)
	}
	children, err := refs(tx, st.Children, rid)
	for _, c := range children {
		rel.Children = append(rel.Children, c.JobRef)
	}
	return rel, err
}

// refs reads the jobs a query of Parents' columns lists.
func refs(tx Tx, query string, id int64) ([]queue.ParentResult, error) {
	rows, err := tx.Query(query, id)
	return CollectRows(rows, err, func(r Row) (queue.ParentResult, error) {
		var p queue.ParentResult
		var rid int64
		var st string
		err := r.Scan(&rid, &p.Queue, &p.Kind, &st, &p.FlowNode, &p.Result)
		p.ID, p.State = strconv.FormatInt(rid, 10), queue.State(st)
		return p, err
	})
}
