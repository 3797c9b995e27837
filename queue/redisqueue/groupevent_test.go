package redisqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// TestGroupCompletionJobLogged: the job a group's completion enqueues is
// logged as job.enqueued like any other new job, before the
// group.completed event that names it.
func TestGroupCompletionJobLogged(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			be := srv.open(t).backend(t, redisqueue.Options{Events: true})
			cl := queue.NewClient(be)
			ctx := context.Background()
			if _, err := cl.CreateGroup(ctx, queue.GroupSpec{ID: "g1", CompletionKind: "report", CompletionQueue: "reports"}); err != nil {
				t.Fatalf("CreateGroup: %v", err)
			}
			if _, err := cl.Enqueue(ctx, queue.JobSpec{Queue: "work", Kind: "page", Group: "g1"}); err != nil {
				t.Fatalf("Enqueue: %v", err)
			}
			ls, err := be.Lease(ctx, backend.LeaseRequest{Queues: []string{"work"}, WorkerID: "w", Max: 1, LeaseFor: time.Minute})
			if err != nil || len(ls) != 1 {
				t.Fatalf("Lease = %d leases, %v; want 1", len(ls), err)
			}
			if err := be.Complete(ctx, ls[0].Job.ID, ls[0].Token, nil); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			var es []queue.Event
			for after := ""; ; {
				b, err := be.ReadEvents(ctx, after, 100, 0)
				if err != nil {
					t.Fatalf("ReadEvents: %v", err)
				}
				if len(b.Events) == 0 {
					break
				}
				es = append(es, b.Events...)
				after = b.Events[len(b.Events)-1].ID
			}
			var group *queue.Event
			enqueued := -1
			for i, e := range es {
				switch {
				case e.Type == queue.EventGroupCompleted:
					group = &es[i]
				case e.Type == queue.EventJobEnqueued && e.Queue == "reports":
					enqueued = i
				}
			}
			if group == nil || group.JobID == "" {
				t.Fatalf("no group.completed event naming a completion job in %+v", es)
			}
			if enqueued < 0 {
				t.Fatalf("no job.enqueued event for the completion job in %+v", es)
			}
			got := es[enqueued]
			want := queue.Event{Type: queue.EventJobEnqueued, JobID: group.JobID, Queue: "reports", Kind: "report", State: queue.StatePending}
			if got.JobID != want.JobID || got.Kind != want.Kind || got.State != want.State {
				t.Errorf("completion job's event = %+v, want %+v", got, want)
			}
			if es[len(es)-1].Type != queue.EventGroupCompleted {
				t.Errorf("last event %s, want group.completed after the completion job's job.enqueued", es[len(es)-1].Type)
			}
		})
	}
}
