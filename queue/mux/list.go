package mux

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// List pages through jobs. With f.Queue, it is that queue's backend's
// listing (an error matching queue.ErrUnsupported on a backend that cannot
// list). Without, it lists backend after backend (the default first),
// each in f.Order (NewestFirst is newest first within each backend),
// skipping backends that cannot list; the cursor says
// which backend to continue on. Every other filter passes through to
// each backend as it is. A backend's short page with a cursor (its work
// bound was reached) ends the router's page there too.
func (m *Backend) List(ctx context.Context, f queue.ListFilter) (*queue.Page, error) {
	if f.Queue != "" || len(m.routes) == 1 {
		r := m.routes[m.index(f.Queue)]
		p, err := r.b.List(ctx, f)
		if err != nil {
			return nil, r.wrap(err)
		}
		r.outerPage(p)
		return p, nil
	}
	i, cursor, err := parseCursor(f.Cursor, len(m.routes))
	if err != nil {
		return nil, err
	}
	limit := f.Limit
	if limit <= 0 {
		limit = queue.DefaultListLimit
	}
	out := &queue.Page{}
	for ; i < len(m.routes); i, cursor = i+1, "" {
		r := m.routes[i]
		if !backend.CapabilitiesOf(r.b).Has(queue.CapList) {
			continue
		}
		sub := f
		sub.Cursor, sub.Limit = cursor, limit-len(out.Jobs)
		p, err := r.b.List(ctx, sub)
		if err != nil {
			return nil, r.wrap(err)
		}
		r.outerPage(p)
		out.Jobs = append(out.Jobs, p.Jobs...)
		if p.Next != "" {
			out.Next = strconv.Itoa(i) + ":" + p.Next
			return out, nil
		}
		if len(out.Jobs) >= limit {
			if i+1 < len(m.routes) {
				out.Next = strconv.Itoa(i+1) + ":"
			}
			return out, nil
		}
	}
	return out, nil
}

// parseCursor reads "<route index>:<the backend's cursor>".
func parseCursor(c string, routes int) (int, string, error) {
	if c == "" {
		return 0, "", nil
	}
	n, rest, ok := strings.Cut(c, ":")
	i, err := strconv.Atoi(n)
	if !ok || err != nil || i < 0 || i >= routes {
		return 0, "", backend.InvalidArgument(queue.Field("ListFilter", "Cursor"), "is not a cursor of this listing")
	}
	return i, rest, nil
}

func (r route) outerPage(p *queue.Page) {
	if r.prefix == "" || p == nil {
		return
	}
	for k, j := range p.Jobs {
		p.Jobs[k] = r.outer(j)
	}
}

// Stats merges every backend's counts, summing a queue found on more than
// one (jobs left behind by a queue that moved), sorted by queue. A queue's
// pause is the one its own backend reports.
func (m *Backend) Stats(ctx context.Context) ([]queue.QueueStats, error) {
	byQueue := map[string]map[queue.State]int64{}
	paused := map[string]time.Time{}
	var errs []error
	for _, r := range m.routes {
		st, err := r.b.Stats(ctx)
		if err != nil {
			errs = append(errs, r.wrap(err))
			continue
		}
		for _, qs := range st {
			if m.routes[m.index(qs.Queue)].b == r.b {
				paused[qs.Queue] = qs.PausedUntil
			}
			c := byQueue[qs.Queue]
			if c == nil {
				c = map[queue.State]int64{}
				byQueue[qs.Queue] = c
			}
			for s, n := range qs.Counts {
				c[s] += n
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	out := make([]queue.QueueStats, 0, len(byQueue))
	for q, c := range byQueue {
		out = append(out, queue.QueueStats{Queue: q, Counts: c, PausedUntil: paused[q]})
	}
	slices.SortFunc(out, func(a, b queue.QueueStats) int { return strings.Compare(a.Queue, b.Queue) })
	return out, nil
}

// RescueExpired rescues on the backends of req.Queues (all backends when
// empty), each up to req.Limit, and sums what they did. A failing backend
// does not stop the others; its error is returned with the sums.
func (m *Backend) RescueExpired(ctx context.Context, req backend.RescueRequest) (backend.RescueResult, error) {
	var sum backend.RescueResult
	var errs []error
	m.fanOut(req.Queues, func(r route, qs []string) {
		sub := req
		sub.Queues = qs
		res, err := r.b.RescueExpired(ctx, sub)
		sum.Requeued += res.Requeued
		sum.Failed += res.Failed
		sum.Cancelled += res.Cancelled
		errs = append(errs, r.wrap(err))
	})
	return sum, errors.Join(errs...)
}

// Cleanup cleans on the backends of req.Queues (all backends when empty),
// each up to req.Limit, and returns how many they deleted in all. A
// failing backend does not stop the others.
func (m *Backend) Cleanup(ctx context.Context, req backend.CleanupRequest) (int, error) {
	sum := 0
	var errs []error
	m.fanOut(req.Queues, func(r route, qs []string) {
		sub := req
		sub.Queues = qs
		n, err := r.b.Cleanup(ctx, sub)
		sum += n
		errs = append(errs, r.wrap(err))
	})
	return sum, errors.Join(errs...)
}

// fanOut calls fn for each backend of queues, with its queues (nil, meaning
// all, for every backend when queues is empty), in route order.
func (m *Backend) fanOut(queues []string, fn func(r route, qs []string)) {
	if len(queues) == 0 {
		for _, r := range m.routes {
			fn(r, nil)
		}
		return
	}
	groups := m.split(queues)
	for i, r := range m.routes {
		if qs, ok := groups[i]; ok {
			fn(r, qs)
		}
	}
}
