package backend

import (
	"context"

	"github.com/sluicehq/sluice/queue/queuetype"
)

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
	Spec queuetype.JobSpec
	// Parents are the indexes of the node's parents in FlowPlan.Nodes,
	// each smaller than the node's own.
	Parents []int
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
	EnqueueFlow(ctx context.Context, p FlowPlan) ([]*queuetype.Job, error)
	// Flow returns the flow with its stored jobs, or ErrFlowNotFound.
	Flow(ctx context.Context, id string) (*queuetype.Flow, error)
	// Relatives returns the parents (with results, at most maxResults
	// bytes of them) and children of job id, or ErrNotFound.
	Relatives(ctx context.Context, id string, maxResults int) (*queuetype.Relatives, error)
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
