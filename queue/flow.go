package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"
)

// Bounds of flows and dependencies.
const (
	// MaxParents bounds JobSpec.DependsOn and the parents of one node of
	// a flow: a job may wait for at most 1,000 others.
	MaxParents = 1000
	// MaxFlowNodes bounds the jobs of one flow.
	MaxFlowNodes = 10000
	// MaxParentResults bounds the parents' results handed to a job
	// (Job.Parents), in bytes altogether: parents past the bound come
	// without their result (ParentResult.Omitted), to be read with Get.
	MaxParentResults = 1 << 20
)

// ParentFailure is what a job does when one of its parents fails for good
// or is cancelled (JobSpec.OnParentFailure).
type ParentFailure string

// The answers to a parent's failure.
const (
	// ParentFailureCancel cancels the job, and so its own dependents, in
	// the same step that ended the parent; the empty value means it.
	ParentFailureCancel ParentFailure = "cancel"
	// ParentFailureRun runs the job anyway once every parent has ended.
	ParentFailureRun ParentFailure = "run"
)

// Valid reports whether p is "", "cancel" or "run".
func (p ParentFailure) Valid() bool {
	return p == "" || p == ParentFailureCancel || p == ParentFailureRun
}

// ErrFlowNotFound means no flow has the given id.
var ErrFlowNotFound = errors.New("queue: flow not found")

// FlowSpec describes a flow: jobs with names local to the flow, and edges
// saying which must complete before which. Client.EnqueueFlow stores it in
// one atomic step.
type FlowSpec struct {
	// Name labels the flow in listings; optional.
	Name string
	// Nodes are the flow's jobs; at least one, at most MaxFlowNodes.
	Nodes []FlowNode
	// Edges order them: Child waits for Parent.
	Edges []FlowEdge
}

// FlowNode is one job of a flow.
type FlowNode struct {
	// Name is the node's name, unique within the flow. Required.
	Name string
	// Job is the job to enqueue. Its DependsOn may name jobs stored
	// before, outside the flow; the edges add the flow's own parents.
	Job JobSpec
}

// FlowEdge says that Child runs only after Parent has completed (both are
// node names).
type FlowEdge struct {
	Parent, Child string
}

// FlowPlan is a validated flow as a backend stores it
// (FlowBackend.EnqueueFlow): nodes in an order where every parent comes
// before its children, the specs' defaults filled in.
type FlowPlan struct {
	// ID is the flow's new id; Name its label.
	ID, Name string
	// Nodes in dependency order.
	Nodes []PlannedNode
}

// PlannedNode is one node of a FlowPlan.
type PlannedNode struct {
	// Name is the node's name in the flow.
	Name string
	// Spec is the job; Spec.DependsOn holds the parents outside the flow.
	Spec JobSpec
	// Parents are the indexes of the node's parents in FlowPlan.Nodes,
	// each smaller than the node's own.
	Parents []int
}

// Flow is a stored flow: its jobs, with their edges in each job's
// DependsOn, in dependency order.
type Flow struct {
	ID, Name string
	// CreatedAt is when the flow was enqueued.
	CreatedAt time.Time
	// Jobs are the flow's jobs still stored (the cleaner deletes finished
	// ones after their retention).
	Jobs []*Job
}

// Job returns the job of node name, or nil.
func (f *Flow) Job(name string) *Job {
	for _, j := range f.Jobs {
		if j.FlowNode == name {
			return j
		}
	}
	return nil
}

// JobRef names a job and where it is.
type JobRef struct {
	ID       string
	Queue    string
	Kind     string
	State    State
	FlowNode string
}

// ParentResult is a parent of a job, as its handler sees it.
type ParentResult struct {
	JobRef
	// Result is what the parent's handler returned, when it completed.
	Result []byte
	// Omitted is true when the result was left out to keep the job's
	// parents' results within MaxParentResults.
	Omitted bool
}

// Relatives are a job's parents and children.
type Relatives struct {
	// Parents are the jobs it depends on, results included up to
	// MaxParentResults in all.
	Parents []ParentResult
	// Children are the jobs that depend on it.
	Children []JobRef
}

// FlowBackend is the part of a backend that stores dependent jobs
// (Features.Flows, CapFlows). A backend with it also honours
// JobSpec.DependsOn in Backend.Enqueue: a job whose parents have not all
// completed is stored blocked, and one with a parent that already failed
// or was cancelled is stored cancelled (or ready, with ParentFailureRun).
//
// The release of a dependent happens in the same atomic step as the
// transition that ended its last parent (Complete, Fail, Cancel, a rescue,
// a tenant's MaxWait): blocked → scheduled or pending, through the same
// path as any job that becomes ready; or blocked → cancelled, recursively,
// with LastError naming the parent. Retrying an ended parent by hand
// (Retrier) puts the dependents it cancelled back to blocked in the same
// step.
type FlowBackend interface {
	// EnqueueFlow stores every node of p as a job of flow p.ID, in one
	// atomic step, and returns the jobs in p's order. A DependsOn id
	// that names no job is an *InvalidArgumentError and nothing is
	// stored.
	EnqueueFlow(ctx context.Context, p FlowPlan) ([]*Job, error)
	// Flow returns the flow with its stored jobs, or ErrFlowNotFound.
	Flow(ctx context.Context, id string) (*Flow, error)
	// Relatives returns the parents (with results, at most maxResults
	// bytes of them) and children of job id, or ErrNotFound.
	Relatives(ctx context.Context, id string, maxResults int) (*Relatives, error)
}

// newFlowID returns a random flow id.
func newFlowID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "flow_" + hex.EncodeToString(b[:])
}

// validDeps checks JobSpec.DependsOn and OnParentFailure.
func validDeps(s JobSpec) error {
	if len(s.DependsOn) > MaxParents {
		return invalid(Field("JobSpec", "DependsOn"), "must list at most %d jobs, got %d", MaxParents, len(s.DependsOn))
	}
	seen := make(map[string]bool, len(s.DependsOn))
	for _, id := range s.DependsOn {
		if id == "" {
			return invalid(Field("JobSpec", "DependsOn"), "must not hold an empty job id")
		}
		if seen[id] {
			return invalid(Field("JobSpec", "DependsOn"), "lists job %q twice", id)
		}
		seen[id] = true
	}
	if !s.OnParentFailure.Valid() {
		return invalid(Field("JobSpec", "OnParentFailure"), "must be %q or %q, got %q", ParentFailureCancel, ParentFailureRun, s.OnParentFailure)
	}
	return nil
}

// flowsOf returns the flow part of b (or of the backend of queue q on a
// router), or an *UnsupportedError.
func flowsOf(b Backend, q string) (FlowBackend, error) {
	if q != "" {
		b = placed(b, q)
	}
	f := b.Features()
	if f.Flows == nil {
		return nil, f.unsupported(CapFlows)
	}
	return f.Flows, nil
}

// BoundResult is the rule of MaxParentResults for a backend that reads a
// job's parents: a result that fits in what is left of the budget comes
// whole, one that does not is left out (omitted). It returns the result
// to hand out, whether it was left out, and the budget left.
func BoundResult(r []byte, budget int) ([]byte, bool, int) {
	if len(r) > budget {
		return nil, true, budget
	}
	return r, false, budget - len(r)
}
