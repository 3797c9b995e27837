package redisqueue

import (
	"context"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
)

// listBudget bounds how many jobs one List call looks at per queue when it
// filters by state: a page may then come back short (even empty) with a
// cursor to continue from, rather than one call walking a huge queue.
var listBudget = 5000

// pageItem is one job found by the list script, with its id for merging.
type pageItem struct {
	id  string
	job *queue.Job
}

// List implements queue.Backend. Jobs come in id order, which is enqueue
// order (the ids start with the enqueue sequence). Across queues, each
// queue is read from the cursor on and the results are merged.
func (b *Backend) List(ctx context.Context, f queue.ListFilter) (*queue.Page, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = queue.DefaultListLimit
	}
	limit = min(limit, queue.MaxListLimit)
	var cseq, cesc string
	if f.Cursor != "" {
		seq, q, err := parseID(f.Cursor)
		if err != nil {
			return nil, queue.InvalidArgument("ListFilter.Cursor", "is not a cursor from this backend: %q", f.Cursor)
		}
		cseq, cesc = seq, keyspace.Escape(q)
	}
	var named []string
	if f.Queue != "" {
		named = []string{f.Queue}
	}
	qs, err := b.allQueues(ctx, "list", named)
	if err != nil {
		return nil, err
	}
	var items []pageItem
	horizon := ""
	for _, q := range qs {
		got, last, err := b.listQueue(ctx, q, startBound(q, cseq, cesc), limit+1, f.States)
		if err != nil {
			return nil, err
		}
		items = append(items, got...)
		if last != "" && (horizon == "" || last < horizon) {
			horizon = last
		}
	}
	return page(items, horizon, limit), nil
}

// startBound is where queue q's listing starts after the cursor: its
// sequences after cseq, or from cseq on when q sorts after the cursor's
// queue (ids compare by sequence, then by escaped queue name).
func startBound(q, cseq, cesc string) string {
	switch {
	case cseq == "":
		return "-"
	case keyspace.Escape(q) > cesc:
		return "[" + cseq
	default:
		return "(" + cseq
	}
}

// listQueue lists one queue from start. It returns the jobs found and,
// when the queue was not read to its end, the id of the last job looked
// at (beyond it this queue is unknown).
func (b *Backend) listQueue(ctx context.Context, q, start string, count int, states []queue.State) ([]pageItem, string, error) {
	k := b.keys.queue(q)
	keys, args := b.group([]*qkeys{k}, 4+len(states))
	args = append(args, start, count, listBudget, len(states))
	for _, s := range states {
		args = append(args, string(s))
	}
	v, err := b.eval(ctx, "list", scriptList, keys, args...)
	if err != nil {
		return nil, "", err
	}
	l, err := asList(v, "list reply")
	if err != nil || len(l) != 3 {
		return nil, "", b.fault("list", errReply{"list reply"})
	}
	raw, err := asList(l[2], "listed jobs")
	if err != nil {
		return nil, "", b.fault("list", err)
	}
	out := make([]pageItem, 0, len(raw))
	for _, r := range raw {
		it, err := asList(r, "listed job")
		if err != nil || len(it) != 2 {
			return nil, "", b.fault("list", errReply{"listed job"})
		}
		j, err := decodeJob(k, asString(it[0]), it[1])
		if err != nil {
			return nil, "", b.fault("list", err)
		}
		if j != nil {
			out = append(out, pageItem{id: j.ID, job: j})
		}
	}
	last := ""
	if asInt(l[0]) == 0 {
		last = k.id(asString(l[1]))
	}
	return out, last, nil
}

// page merges the queues' jobs: only those up to the horizon (the
// smallest id any queue stopped at) are known to be complete, so the page
// ends there at the latest.
func page(items []pageItem, horizon string, limit int) *queue.Page {
	slices.SortFunc(items, func(a, b pageItem) int { return strings.Compare(a.id, b.id) })
	if horizon != "" {
		n, _ := slices.BinarySearchFunc(items, horizon, func(it pageItem, h string) int { return strings.Compare(it.id, h) })
		if n < len(items) && items[n].id == horizon {
			n++
		}
		items = items[:n]
	}
	p := &queue.Page{}
	switch {
	case len(items) > limit:
		items = items[:limit]
		p.Next = items[limit-1].id
	case horizon != "":
		p.Next = horizon
	}
	for _, it := range items {
		p.Jobs = append(p.Jobs, it.job)
	}
	return p
}
