package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/queue/backend"
)

// EnqueueFlow stores a flow: every node as a job, blocked until its parents
// (the edges, and its own DependsOn) have completed, all in one atomic
// step. A bad flow (a cycle, an edge naming no node, a bad spec) returns an
// *InvalidArgumentError naming the field (see FlowSpec.Plan) and stores
// nothing. It needs CapFlows on the backend holding the nodes' queues; on a
// router every node must be on the default backend (queue/mux), which
// stores the whole flow. Unique keys apply to each node as to Enqueue,
// except that a held key refuses the whole flow with ErrDuplicate: a node
// cannot stand for a job outside the flow.
func (c *Client) EnqueueFlow(ctx context.Context, f FlowSpec) (*Flow, error) {
	plan, err := f.Plan(c.cfg.MaxPayload)
	if err != nil {
		return nil, err
	}
	nodes := make([]JobSpec, len(f.Nodes))
	for i, n := range f.Nodes {
		nodes[i] = n.Job
	}
	if err := c.checkSpecHooks(ctx, nodes, "nodes"); err != nil { // hookcheck.go
		return nil, err
	}
	plan.ID = newFlowID()
	specs := make([]JobSpec, len(plan.Nodes))
	for i, n := range plan.Nodes {
		specs[i] = n.Spec
	}
	if err := checkScheduling(ctx, c.b, specs); err != nil { // enforce.go
		return nil, err
	}
	if err := backend.CheckPlaced(c.b, specs); err != nil {
		return nil, err
	}
	fb, err := flowsOf(c.b, "")
	if err != nil {
		return nil, err
	}
	rsv, err := c.adm.admit(ctx, c.b, specs)
	if err != nil {
		return nil, err
	}
	c.cfg.Priority.apply(ctx, specs)
	for i := range plan.Nodes {
		plan.Nodes[i].Spec = specs[i]
	}
	jobs, err := fb.EnqueueFlow(ctx, plan)
	var res []Enqueued
	if err == nil {
		res = make([]Enqueued, len(jobs))
		for i, j := range jobs {
			res[i] = Enqueued{Job: j}
		}
	}
	c.adm.settle(rsv, specs, res, err)
	if err != nil {
		return nil, c.adm.refusal(err)
	}
	return &Flow{ID: plan.ID, Name: plan.Name, CreatedAt: jobs[0].CreatedAt, Jobs: jobs}, nil
}

// Flow returns a flow with its jobs (those the cleaner has not deleted),
// or ErrFlowNotFound.
func (c *Client) Flow(ctx context.Context, id string) (*Flow, error) {
	fb, err := flowsOf(c.b, "")
	if err != nil {
		return nil, err
	}
	return fb.Flow(ctx, id)
}

// CancelFlow cancels every unfinished job of a flow, as Cancel does each:
// jobs that have not started never run, running ones are asked to stop.
// Jobs a worker releases meanwhile are cancelled too. It returns the flow
// as it is after the call, or ErrFlowNotFound.
func (c *Client) CancelFlow(ctx context.Context, id string) (*Flow, error) {
	fb, err := flowsOf(c.b, "")
	if err != nil {
		return nil, err
	}
	// Roots first: cancelling a parent cancels its blocked dependents in
	// its own step, so most jobs go with their parents. A pass that finds
	// only finished or stopping jobs is the last.
	for pass := 0; ; pass++ {
		f, err := fb.Flow(ctx, id)
		if err != nil {
			return nil, err
		}
		n, err := c.cancelOpen(ctx, f)
		if err != nil || n == 0 || pass > 3 {
			return f, err
		}
	}
}

// cancelOpen cancels the jobs of f not finished nor already stopping and
// returns how many it cancelled.
func (c *Client) cancelOpen(ctx context.Context, f *Flow) (int, error) {
	n := 0
	for _, j := range f.Jobs {
		if j.State.Final() || j.CancelRequested {
			continue
		}
		_, err := c.b.Cancel(ctx, j.ID)
		if err != nil && !errors.Is(err, ErrJobFinished) && !errors.Is(err, ErrNotFound) {
			return n, fmt.Errorf("queue: cancel flow %s: job %s: %w", f.ID, j.ID, err)
		}
		n++
	}
	return n, nil
}

// Relatives returns a job's parents, with their results up to
// MaxParentResults bytes in all, and its children, or ErrNotFound.
func (c *Client) Relatives(ctx context.Context, id string) (*Relatives, error) {
	fb, err := flowsOf(c.b, "")
	if err != nil {
		return nil, err
	}
	return fb.Relatives(ctx, id, MaxParentResults)
}

// withParents fills j.Parents when j has parents and b serves flows. A
// parent's result is read after it completed, so a read apart from the
// step that handed j out sees the same bytes.
func withParents(ctx context.Context, b backend.Backend, j *Job) error {
	if len(j.DependsOn) == 0 {
		return nil
	}
	fb, err := flowsOf(b, j.Queue)
	if err != nil {
		return nil // a backend without flows has no parents to read
	}
	rel, err := fb.Relatives(ctx, j.ID, MaxParentResults)
	if err != nil {
		return err
	}
	j.Parents = rel.Parents
	return nil
}

// WithParents fills Job.Parents of each leased job that has parents, from
// the backend that holds it: what Worker does before it runs a handler,
// for a server handing leases out over its own protocol.
func WithParents(ctx context.Context, b backend.Backend, leases []Lease) error {
	for _, l := range leases {
		if err := withParents(ctx, b, l.Job); err != nil {
			return err
		}
	}
	return nil
}
