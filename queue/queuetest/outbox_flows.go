package queuetest

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// testOutboxFlowCascade: a parent that fails for good cancels the child
// waiting for it, and that cancellation records its event like any other
// job's end, though no call ended the child: a webhook watching the
// child hears of it. A grandchild cancelled in turn records one too.
func testOutboxFlowCascade(t *testing.T, f Factory) {
	t.Parallel()
	h := newOutboxHarness(t, f)
	parent := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "parent", MaxAttempts: 1})
	child := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "child", DependsOn: []string{parent.ID}})
	grandchild := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "grandchild", DependsOn: []string{child.ID}})
	l := h.leaseOne(t, QueueQ)
	if l.Job.ID != parent.ID {
		t.Fatalf("leased %s, want the parent %s", l.Job.ID, parent.ID)
	}
	if _, err := h.Backend.Fail(context.Background(), parent.ID, l.Token, backend.Failure{Error: "boom", Permanent: true}); err != nil {
		t.Fatal(err)
	}
	h.wantState(t, child.ID, queue.StateCancelled)
	h.wantState(t, grandchild.ID, queue.StateCancelled)
	got := h.eventsByJob(t)
	want := map[string]queue.EventType{
		parent.ID: queue.EventJobFailed, child.ID: queue.EventJobCancelled, grandchild.ID: queue.EventJobCancelled,
	}
	for id, typ := range want {
		e, ok := got[id]
		switch {
		case !ok:
			t.Errorf("job %s: no event, want %s", id, typ)
		case e.Type != typ || e.State != queue.State(strings.TrimPrefix(string(typ), "job.")):
			t.Errorf("job %s: event %s state %s, want %s", id, e.Type, e.State, typ)
		case e.Queue != QueueQ || e.Kind == "":
			t.Errorf("job %s: event queue %q kind %q, want the job's", id, e.Queue, e.Kind)
		}
	}
	if e := got[child.ID]; !strings.Contains(e.Error, parent.ID) {
		t.Errorf("child's event error %q, want it to name the parent %s", e.Error, parent.ID)
	}
	if len(got) != len(want) {
		t.Errorf("%d events, want %d: %+v", len(got), len(want), got)
	}
}
