package queuetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// RunListing checks List's filters by tenant, kind and group, alone and
// combined with queue and state, paged, oldest and newest first, and the
// errors for bad filters; and, on a backend with CapTenantList, the
// tenant listing.
func RunListing(t *testing.T, f Factory) {
	runTests(t, f, []test{
		{"Filters", needs(queue.CapList, queue.CapGroups), testListFilters},
		{"BadFilters", needs(queue.CapList), testListBadFilters},
		{"TenantList", nil, testTenantList},
	})
}

// listFixture enqueues jobs over two queues, two tenants (and none), two
// kinds and two groups (and none), leases one, and returns every job as
// stored, oldest first.
func listFixture(t *testing.T, h *Harness) []*queue.Job {
	t.Helper()
	tenants := []string{"acme", "", "globex", "acme", "globex"}
	kinds := []string{"crawl", "scrape", "crawl"}
	groups := []string{"g1", "", "g2", ""}
	var ids []string
	for i := range 24 {
		s := queue.JobSpec{Queue: []string{QueueA, QueueB}[i%2], Kind: kinds[i%len(kinds)],
			Tenant: tenants[i%len(tenants)], Group: groups[i%len(groups)]}
		ids = append(ids, h.enqueue(t, s).ID)
		if i%7 == 0 {
			h.Clock.Advance(1)
		}
	}
	h.lease(t, 3, QueueA)
	jobs := make([]*queue.Job, len(ids))
	for i, id := range ids {
		jobs[i] = h.get(t, id)
	}
	return jobs
}

func testListFilters(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	jobs := listFixture(t, h)
	queueOf := map[string]string{}
	for _, j := range jobs {
		queueOf[j.ID] = j.Queue
	}
	cases := []struct {
		name string
		f    queue.ListFilter
	}{
		{"tenant", queue.ListFilter{Tenant: "acme"}},
		{"kind", queue.ListFilter{Kind: "scrape"}},
		{"group", queue.ListFilter{Group: "g1"}},
		{"unknown tenant", queue.ListFilter{Tenant: "nobody"}},
		{"tenant and kind", queue.ListFilter{Tenant: "globex", Kind: "crawl"}},
		{"queue and tenant", queue.ListFilter{Queue: QueueA, Tenant: "acme"}},
		{"group and state", queue.ListFilter{Group: "g2", States: []queue.State{queue.StatePending}}},
		{"state and tenant", queue.ListFilter{Tenant: "acme", States: []queue.State{queue.StateActive}}},
		{"all filters", queue.ListFilter{Queue: QueueA, Tenant: "acme", Kind: "crawl", Group: "g1", States: []queue.State{queue.StateActive, queue.StatePending}}},
		{"none", queue.ListFilter{}},
	}
	for _, c := range cases {
		var want []string
		for _, j := range jobs {
			if matches(c.f, j) {
				want = append(want, j.ID)
			}
		}
		for _, newest := range []bool{false, true} {
			lf := c.f
			want := slices.Clone(want)
			if newest {
				lf.Order = queue.NewestFirst
				slices.Reverse(want)
			}
			if got := listAll(t, h, lf, 2); !sameListing(h.Backend, queueOf, got, want) {
				t.Errorf("%s (%s): listed %v, want %v", c.name, order(lf), got, want)
			}
		}
	}
}

// sameListing reports whether got lists the jobs of want in its order.
// A router lists backend after backend, so there only the order within
// each queue is promised.
func sameListing(b backend.Backend, queueOf map[string]string, got, want []string) bool {
	if b.Features().Router == nil {
		return slices.Equal(got, want)
	}
	byQueue := func(ids []string) map[string][]string {
		m := map[string][]string{}
		for _, id := range ids {
			m[queueOf[id]] = append(m[queueOf[id]], id)
		}
		return m
	}
	g, w := byQueue(got), byQueue(want)
	if len(got) != len(want) || len(g) != len(w) {
		return false
	}
	for q, ids := range w {
		if !slices.Equal(g[q], ids) {
			return false
		}
	}
	return true
}

func order(f queue.ListFilter) string {
	if f.Order.Newest() {
		return "newest first"
	}
	return "oldest first"
}

func matches(f queue.ListFilter, j *queue.Job) bool {
	return (f.Queue == "" || j.Queue == f.Queue) && (f.Tenant == "" || j.Tenant == f.Tenant) &&
		(f.Kind == "" || j.Kind == f.Kind) && (f.Group == "" || j.Group == f.Group) &&
		(len(f.States) == 0 || slices.Contains(f.States, j.State))
}

// listAll pages through f, limit jobs a page, and returns the ids in the
// order listed. A page may be short (a backend's work bound) but never
// longer than the limit.
func listAll(t *testing.T, h *Harness, f queue.ListFilter, limit int) []string {
	t.Helper()
	f.Limit = limit
	var got []string
	for pages := 0; ; pages++ {
		p, err := h.Client.List(context.Background(), f)
		if err != nil {
			t.Fatalf("List(%+v): %v", f, err)
		}
		if len(p.Jobs) > limit {
			t.Fatalf("List(%+v): page of %d jobs, limit %d", f, len(p.Jobs), limit)
		}
		for _, j := range p.Jobs {
			got = append(got, j.ID)
		}
		if p.Next == "" {
			return got
		}
		if pages > 1000 {
			t.Fatalf("List(%+v) never ends", f)
		}
		f.Cursor = p.Next
	}
}

func testListBadFilters(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	long := strings.Repeat("x", queue.MaxNameLen+1)
	cases := []struct {
		f     queue.ListFilter
		field string
	}{
		{queue.ListFilter{Order: "sideways"}, "ListFilter.Order"},
		{queue.ListFilter{Tenant: "a\x00b"}, "ListFilter.Tenant"},
		{queue.ListFilter{Kind: long}, "ListFilter.Kind"},
		{queue.ListFilter{Group: "g\n"}, "ListFilter.Group"},
		{queue.ListFilter{Queue: long}, "ListFilter.Queue"},
		{queue.ListFilter{Limit: -1}, "ListFilter.Limit"},
		{queue.ListFilter{States: []queue.State{"lost"}}, "ListFilter.States"},
		{queue.ListFilter{Cursor: "not a cursor"}, "ListFilter.Cursor"},
		{queue.ListFilter{Cursor: "not a cursor", Order: queue.NewestFirst}, "ListFilter.Cursor"},
	}
	for _, c := range cases {
		_, err := h.Client.List(context.Background(), c.f)
		var ia *queue.InvalidArgumentError
		if !errors.As(err, &ia) || ia.Field != c.field {
			t.Errorf("List(%+v) error = %v, want an invalid argument naming %s", c.f, err, c.field)
		}
	}
}
