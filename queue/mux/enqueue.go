package mux

import (
	"context"

	"github.com/sluicehq/sluice/queue"
)

// Enqueue stores specs on the backends of their queues. Specs of one
// backend are stored in one call to it, with its atomicity; backends are
// called one after another in route order (the default first). When one
// fails after others stored their specs, the error is a
// *queue.PartialError listing what was stored.
func (m *Backend) Enqueue(ctx context.Context, specs []queue.JobSpec) ([]queue.Enqueued, error) {
	if err := m.checkDeps(specs); err != nil {
		return nil, err
	}
	groups := m.splitSpecs(specs)
	if len(groups) == 1 {
		for i, g := range groups {
			r := m.routes[i]
			res, err := r.b.Enqueue(ctx, g.specs)
			if err != nil {
				return nil, r.wrap(err)
			}
			return r.outerAll(res), nil
		}
	}
	out := make([]queue.Enqueued, len(specs))
	stored := false
	for i := range m.routes {
		g, ok := groups[i]
		if !ok {
			continue
		}
		r := m.routes[i]
		res, err := r.b.Enqueue(ctx, g.specs)
		if err == nil && len(res) != len(g.specs) {
			err = errResults(len(res), len(g.specs))
		}
		if err != nil {
			if !stored {
				return nil, r.wrap(err)
			}
			return nil, &queue.PartialError{Results: out, Route: r.name, Err: err}
		}
		for k, e := range r.outerAll(res) {
			out[g.at[k]] = e
		}
		stored = true
	}
	return out, nil
}

// specGroup is the specs of one backend and their positions in the batch.
type specGroup struct {
	specs []queue.JobSpec
	at    []int
}

func (m *Backend) splitSpecs(specs []queue.JobSpec) map[int]*specGroup {
	groups := map[int]*specGroup{}
	for k, s := range specs {
		i := m.index(s.Queue)
		g := groups[i]
		if g == nil {
			g = &specGroup{}
			groups[i] = g
		}
		g.specs = append(g.specs, s)
		g.at = append(g.at, k)
	}
	return groups
}

func (r route) outerAll(res []queue.Enqueued) []queue.Enqueued {
	if r.prefix == "" {
		return res
	}
	for k := range res {
		res[k].Job = r.outer(res[k].Job)
	}
	return res
}
