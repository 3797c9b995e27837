package queuetest

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// testOutboxGroup finishes a group's last jobs concurrently: each job has
// its own event, and the group exactly one group.completed, carrying the
// final counts and the completion job's id.
func testOutboxGroup(t *testing.T, f Factory) {
	t.Parallel()
	h := newOutboxHarness(t, f)
	h.Need(t, queue.CapGroups)
	ctx := context.Background()
	if _, err := h.Client.CreateGroup(ctx, queue.GroupSpec{ID: "crawl-1", CompletionKind: "report", CompletionQueue: "reports"}); err != nil {
		t.Fatalf("CreateGroup: %v", err)
	}
	const n = 8
	for i := 0; i < n; i++ {
		h.enqueue(t, queue.JobSpec{Queue: "g", Kind: "page", Group: "crawl-1"})
	}
	ls := h.lease(t, n, "g")
	if len(ls) != n {
		t.Fatalf("leased %d jobs, want %d", len(ls), n)
	}
	var wg sync.WaitGroup
	for i, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if i%4 == 0 {
				_, err = h.Backend.Fail(ctx, l.Job.ID, l.Token, backend.Failure{Error: "404", Permanent: true})
			} else {
				err = h.Backend.Complete(ctx, l.Job.ID, l.Token, nil)
			}
			if err != nil {
				t.Errorf("finishing job %s: %v", l.Job.ID, err)
			}
		}()
	}
	wg.Wait()
	types := map[queue.EventType]int{}
	var group queue.Event
	for _, c := range h.claimAll(t) {
		types[c.Event.Type]++
		if c.Event.Type == queue.EventGroupCompleted {
			group = c.Event
		}
	}
	want := map[queue.EventType]int{queue.EventJobCompleted: 6, queue.EventJobFailed: 2, queue.EventGroupCompleted: 1}
	for typ, k := range want {
		if types[typ] != k {
			t.Errorf("%d %s events, want %d (all: %v)", types[typ], typ, k, types)
		}
	}
	var rep queue.CompletionReport
	if err := json.Unmarshal(group.Data, &rep); err != nil {
		t.Fatalf("group.completed data %q: %v", group.Data, err)
	}
	if group.Group != "crawl-1" || rep.Total != n || rep.Completed != 6 || rep.Failed != 2 || group.JobID == "" {
		t.Errorf("group.completed = %+v, report %+v; want group crawl-1, 8 total, 6 completed, 2 failed, the completion job's id", group, rep)
	}
	if group.JobID != "" {
		if j := h.get(t, group.JobID); j.Kind != "report" || j.Queue != "reports" {
			t.Errorf("group.completed JobID %s is a %s job in %s, want the report completion job", group.JobID, j.Kind, j.Queue)
		}
	}
}
