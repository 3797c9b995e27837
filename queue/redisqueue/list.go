package redisqueue

import (
	"context"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// listBudget bounds how many jobs one List call looks at per queue when it
// filters (by state, tenant, kind or group): a page may then come back
// short (even empty) with a cursor to continue from, rather than one
// script walking a huge queue while every other client of the shard
// waits. Without filters a page reads just its own jobs. One call at this
// bound holds Redis for a few milliseconds (BenchmarkListFilteredRare).
var listBudget = 1000

// pageItem is one job found by the list script, with its id for merging.
type pageItem struct {
	id  string
	job *queue.Job
}

// List implements backend.Backend. Jobs come in id order, which is enqueue
// order (the ids start with the enqueue sequence), or its reverse with
// NewestFirst. Across queues, each queue is read from the cursor on and
// the results are merged. Filters are applied while the list script
// scans a queue's index, within listBudget jobs per queue and call (see
// listBudget): a filtered page may be short with a Next to go on from.
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
			return nil, backend.InvalidArgument(queue.Field("ListFilter", "Cursor"), "is not a cursor from this backend: %q", f.Cursor)
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
		got, last, err := b.listQueue(ctx, q, startBound(q, cseq, cesc, f.Order.Newest()), limit+1, f)
		if err != nil {
			return nil, err
		}
		items = append(items, got...)
		if last != "" && (horizon == "" || before(last, horizon, f.Order.Newest())) {
			horizon = last
		}
	}
	return page(items, horizon, limit, f.Order.Newest()), nil
}

// startBound is where queue q's listing starts after the cursor: its
// sequences after cseq, or from cseq on when q's jobs of that sequence
// come after the cursor's (ids compare by sequence, then by escaped queue
// name; newest first, they come after when q sorts before the cursor's
// queue).
func startBound(q, cseq, cesc string, newest bool) string {
	switch {
	case cseq == "" && newest:
		return "+"
	case cseq == "":
		return "-"
	case keyspace.Escape(q) > cesc && !newest, keyspace.Escape(q) < cesc && newest:
		return "[" + cseq
	default:
		return "(" + cseq
	}
}

// before reports whether id a comes before id b in the listing's order.
func before(a, b string, newest bool) bool {
	if newest {
		return a > b
	}
	return a < b
}

// listQueue lists one queue from start. It returns the jobs found and,
// when the queue was not read to its end, the id of the last job looked
// at (beyond it this queue is unknown).
func (b *Backend) listQueue(ctx context.Context, q, start string, count int, f queue.ListFilter) ([]pageItem, string, error) {
	k := b.keys.queue(q)
	keys, args := b.group([]*qkeys{k}, 8+len(f.States))
	newest := 0
	if f.Order.Newest() {
		newest = 1
	}
	args = append(args, start, count, listBudget, newest, f.Tenant, f.Kind, f.Group, len(f.States))
	for _, s := range f.States {
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

// page merges the queues' jobs: only those up to the horizon (the id
// nearest the start of the listing that any queue stopped at) are known
// to be complete, so the page ends there at the latest.
func page(items []pageItem, horizon string, limit int, newest bool) *queue.Page {
	cmp := func(a, b string) int {
		if newest {
			return strings.Compare(b, a)
		}
		return strings.Compare(a, b)
	}
	slices.SortFunc(items, func(a, b pageItem) int { return cmp(a.id, b.id) })
	if horizon != "" {
		n, _ := slices.BinarySearchFunc(items, horizon, func(it pageItem, h string) int { return cmp(it.id, h) })
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
