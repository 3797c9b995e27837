package queue

import (
	"crypto/rand"
	"encoding/hex"
	"errors"

	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetype"
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

// newFlowID returns a random flow id.
func newFlowID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "flow_" + hex.EncodeToString(b[:])
}

// validDeps checks JobSpec.DependsOn and OnParentFailure.
func validDeps(s JobSpec) error {
	if len(s.DependsOn) > MaxParents {
		return queuetype.InvalidArgument(Field("JobSpec", "DependsOn"), "must list at most %d jobs, got %d", MaxParents, len(s.DependsOn))
	}
	seen := make(map[string]bool, len(s.DependsOn))
	for _, id := range s.DependsOn {
		if id == "" {
			return queuetype.InvalidArgument(Field("JobSpec", "DependsOn"), "must not hold an empty job id")
		}
		if seen[id] {
			return queuetype.InvalidArgument(Field("JobSpec", "DependsOn"), "lists job %q twice", id)
		}
		seen[id] = true
	}
	if !s.OnParentFailure.Valid() {
		return queuetype.InvalidArgument(Field("JobSpec", "OnParentFailure"), "must be %q or %q, got %q", ParentFailureCancel, ParentFailureRun, s.OnParentFailure)
	}
	return nil
}

// flowsOf returns the flow part of b (or of the backend of queue q on a
// router), or an *UnsupportedError.
func flowsOf(b backend.Backend, q string) (backend.FlowBackend, error) {
	if q != "" {
		b = backend.Placed(b, q)
	}
	f := b.Features()
	if f.Flows == nil {
		return nil, backend.Unsupported(f.Name, CapFlows)
	}
	return f.Flows, nil
}
