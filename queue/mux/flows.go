package mux

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// Flows are served by the default backend, as groups are: a job and its
// parents live in one store, whose single atomic step both ends a parent
// and releases its children. The router refuses a flow with a node on a
// routed queue, and a DependsOn on a routed queue or naming a routed
// job, with an *queue.InvalidArgumentError naming the field; it never
// splits a flow over backends.

func (m *Backend) flows() (backend.FlowBackend, error) {
	def := m.Default().Features()
	if def.Flows == nil {
		return nil, backend.Unsupported(def.Name, queue.CapFlows)
	}
	return def.Flows, nil
}

// EnqueueFlow forwards to the default backend once every node is on it.
func (m *Backend) EnqueueFlow(ctx context.Context, p backend.FlowPlan) ([]*queue.Job, error) {
	fb, err := m.flows()
	if err != nil {
		return nil, err
	}
	for i, n := range p.Nodes {
		if err := m.onDefault(n.Spec, queue.FieldPath{}.At("nodes", i)); err != nil {
			return nil, err
		}
	}
	return fb.EnqueueFlow(ctx, p)
}

// onDefault refuses a spec of a flow that is not wholly on the default
// backend; at is the spec's place (its Batch and Index).
func (m *Backend) onDefault(s queue.JobSpec, at queue.FieldPath) error {
	field := func(name string) queue.FieldPath {
		f := queue.Field("JobSpec", name)
		f.Batch, f.Index = at.Batch, at.Index
		return f
	}
	if i := m.index(s.Queue); i != 0 {
		return invalidAt(field("Queue"), fmt.Sprintf("is on route %q: a flow's jobs and their parents must be on the default backend", m.routes[i].name))
	}
	for _, id := range s.DependsOn {
		if r, _ := m.locate(id); r.prefix != "" {
			return invalidAt(field("DependsOn"), fmt.Sprintf("names job %q on route %q: parents must be on the default backend", id, r.name))
		}
	}
	return nil
}

func invalidAt(p queue.FieldPath, rule string) error {
	return &queue.InvalidArgumentError{Field: p.String(), Rule: rule, Path: p}
}

// checkDeps refuses an Enqueue whose specs with DependsOn are not wholly
// on the default backend.
func (m *Backend) checkDeps(specs []queue.JobSpec) error {
	for i, s := range specs {
		if len(s.DependsOn) == 0 {
			continue
		}
		at := queue.FieldPath{}
		if len(specs) > 1 {
			at = at.At("specs", i)
		}
		if err := m.onDefault(s, at); err != nil {
			return err
		}
	}
	return nil
}

// Flow forwards to the default backend.
func (m *Backend) Flow(ctx context.Context, id string) (*queue.Flow, error) {
	fb, err := m.flows()
	if err != nil {
		return nil, err
	}
	return fb.Flow(ctx, id)
}

// Relatives forwards to the default backend; a routed job has none.
func (m *Backend) Relatives(ctx context.Context, id string, maxResults int) (*queue.Relatives, error) {
	if r, _ := m.locate(id); r.prefix != "" {
		if _, err := m.Get(ctx, id); err != nil {
			return nil, err
		}
		return &queue.Relatives{}, nil
	}
	fb, err := m.flows()
	if err != nil {
		return nil, err
	}
	return fb.Relatives(ctx, id, maxResults)
}
