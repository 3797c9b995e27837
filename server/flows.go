package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// Flows over HTTP: POST /v1/flows stores a graph of jobs in one step,
// GET /v1/flows/{flow} shows it with every job's state, and
// POST /v1/flows/{flow}/cancel cancels what is unfinished. A job's own
// depends_on, flow and parents/children show in its body.

// flowFields are the flow members of a job body.
type flowFields struct {
	Flow            string          `json:"flow,omitempty"`
	FlowNode        string          `json:"flow_node,omitempty"`
	DependsOn       []string        `json:"depends_on,omitempty"`
	OnParentFailure string          `json:"on_parent_failure,omitempty"`
	Parents         []parentRefBody `json:"parents,omitempty"`
	Children        []jobRefBody    `json:"children,omitempty"`
}

type jobRefBody struct {
	ID       string      `json:"id"`
	Queue    string      `json:"queue"`
	Kind     string      `json:"kind"`
	State    queue.State `json:"state"`
	FlowNode string      `json:"flow_node,omitempty"`
}

type parentRefBody struct {
	jobRefBody
	ResultJSON   any    `json:"result,omitempty"`
	ResultBase64 string `json:"result_base64,omitempty"`
	// Omitted: the result was left out to keep a job's parents' results
	// within their bound; GET the parent for it.
	Omitted bool `json:"result_omitted,omitempty"`
}

func toFlowFields(j *queue.Job) flowFields {
	f := flowFields{Flow: j.Flow, FlowNode: j.FlowNode, DependsOn: j.DependsOn, OnParentFailure: string(j.OnParentFailure)}
	for _, p := range j.Parents {
		f.Parents = append(f.Parents, toParentBody(p))
	}
	return f
}

func toRefBody(r queue.JobRef) jobRefBody {
	return jobRefBody{ID: r.ID, Queue: r.Queue, Kind: r.Kind, State: r.State, FlowNode: r.FlowNode}
}

func toParentBody(p queue.ParentResult) parentRefBody {
	b := parentRefBody{jobRefBody: toRefBody(p.JobRef), Omitted: p.Omitted}
	raw, b64 := rawOrBase64(p.Result)
	if raw != nil {
		b.ResultJSON = raw
	}
	b.ResultBase64 = b64
	return b
}

// withRelatives is the body of job j with its parents and children, when
// the queue has flows.
func (s *Server) withRelatives(ctx context.Context, j *queue.Job) jobBody {
	b := toJobBody(j)
	rel, err := s.jobs.Relatives(ctx, j.ID)
	if err != nil {
		if !errors.Is(err, queue.ErrUnsupported) {
			s.log.WarnContext(ctx, "server: read a job's relatives", "job", j.ID, "error", err)
		}
		return b
	}
	b.Parents = nil
	for _, p := range rel.Parents {
		b.Parents = append(b.Parents, toParentBody(p))
	}
	for _, c := range rel.Children {
		b.Children = append(b.Children, toRefBody(c))
	}
	return b
}

// flowSpecBody is the body of POST /v1/flows.
type flowSpecBody struct {
	Name  string         `json:"name,omitempty"`
	Nodes []flowNodeBody `json:"nodes"`
	Edges []flowEdgeBody `json:"edges,omitempty"`
}

type flowNodeBody struct {
	Name string      `json:"name"`
	Job  jobSpecBody `json:"job"`
}

type flowEdgeBody struct {
	Parent string `json:"parent"`
	Child  string `json:"child"`
}

type flowBody struct {
	ID        string         `json:"id"`
	Name      string         `json:"name,omitempty"`
	CreatedAt time.Time      `json:"created_at"`
	Jobs      []jobBody      `json:"jobs"`
	Edges     []flowEdgeBody `json:"edges"`
	// Counts of the flow's jobs by state.
	Counts map[queue.State]int `json:"counts"`
}

// toFlowBody writes the flow with its edges as job ids.
func toFlowBody(f *queue.Flow) flowBody {
	b := flowBody{ID: f.ID, Name: f.Name, CreatedAt: f.CreatedAt, Jobs: make([]jobBody, 0, len(f.Jobs)),
		Edges: []flowEdgeBody{}, Counts: map[queue.State]int{}}
	for _, j := range f.Jobs {
		b.Jobs = append(b.Jobs, toJobBody(j))
		b.Counts[j.State]++
		for _, p := range j.DependsOn {
			b.Edges = append(b.Edges, flowEdgeBody{Parent: p, Child: j.ID})
		}
	}
	return b
}

func (b flowSpecBody) spec(now time.Time) (queue.FlowSpec, *problem) {
	f := queue.FlowSpec{Name: b.Name, Nodes: make([]queue.FlowNode, len(b.Nodes))}
	for i, n := range b.Nodes {
		spec, p := n.Job.spec(now, fmt.Sprintf("nodes[%d].job", i))
		if p != nil {
			return f, p
		}
		f.Nodes[i] = queue.FlowNode{Name: n.Name, Job: spec}
	}
	for _, e := range b.Edges {
		f.Edges = append(f.Edges, queue.FlowEdge{Parent: e.Parent, Child: e.Child})
	}
	return f, nil
}

func (s *Server) handleEnqueueFlow(w http.ResponseWriter, r *http.Request) {
	var body flowSpecBody
	if p := decodeJSON(r, &body, false); p != nil {
		writeProblem(w, p, nil)
		return
	}
	spec, p := body.spec(s.now())
	if p != nil {
		writeProblem(w, p, nil)
		return
	}
	f, err := s.jobs.EnqueueFlow(r.Context(), spec)
	if err != nil {
		s.flowError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, toFlowBody(f))
}

func (s *Server) handleGetFlow(w http.ResponseWriter, r *http.Request) {
	f, err := s.jobs.Flow(r.Context(), r.PathValue("flow"))
	if err != nil {
		s.flowError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toFlowBody(f))
}

func (s *Server) handleCancelFlow(w http.ResponseWriter, r *http.Request) {
	f, err := s.jobs.CancelFlow(r.Context(), r.PathValue("flow"))
	if err != nil {
		s.flowError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toFlowBody(f))
}

// flowError answers a flow call's error: a bad flow names its field in the
// body's words (nodes[2].job.queue, edges[0].child), an unknown flow is a
// 404, the rest as for any job call.
func (s *Server) flowError(w http.ResponseWriter, r *http.Request, err error) {
	var ia *queue.InvalidArgumentError
	switch {
	case errors.As(err, &ia) && ia.Path != (queue.FieldPath{}):
		writeProblem(w, badRequest("%s %s", flowField(ia.Path), ia.Rule), nil)
	case errors.Is(err, queue.ErrFlowNotFound):
		writeProblem(w, notFound("unknown flow %q", clip(r.PathValue("flow"))), nil)
	case errors.Is(err, queue.ErrDuplicate):
		writeProblem(w, &problem{Status: http.StatusConflict, Detail: "a node's unique key is held by another job: nothing was stored"}, nil)
	default:
		s.jobError(w, r, err)
	}
}

// flowField names a field of a flow as the body does.
func flowField(p queue.FieldPath) string {
	name := strings.ToLower(p.Name)
	if api, ok := apiFields[[2]string{p.Type, p.Name}]; ok && p.Type == "JobSpec" {
		name = "job." + api
	}
	if p.Batch == "" {
		return name
	}
	return fmt.Sprintf("%s[%d].%s", p.Batch, p.Index, name)
}
