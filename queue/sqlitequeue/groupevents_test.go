package sqlitequeue_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// TestGroupCompletionJobIsLogged completes a group's only job: the log
// holds the group's completion and the job.enqueued of its completion
// job, so a subscriber sees the completion job born like any other.
func TestGroupCompletionJobIsLogged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "q.db"), sqlitequeue.Options{Events: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c := queue.NewClient(b)
	if _, err := c.CreateGroup(ctx, queue.GroupSpec{ID: "crawl", Tenant: "acme", CompletionKind: "report", CompletionQueue: "reports"}); err != nil {
		t.Fatal(err)
	}
	j, err := c.Enqueue(ctx, queue.JobSpec{Queue: "pages", Kind: "page", Tenant: "acme", Group: "crawl"})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"pages"}, WorkerID: "w", Max: 1, LeaseFor: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("Lease = %d, %v", len(ls), err)
	}
	if err := b.Complete(ctx, j.ID, ls[0].Token, nil); err != nil {
		t.Fatal(err)
	}
	g, err := c.Group(ctx, "crawl")
	if err != nil || g.CompletionJobID == "" {
		t.Fatalf("Group = %+v, %v; want a completion job", g, err)
	}
	batch, err := b.ReadEvents(ctx, "", 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	var done, born bool
	for _, e := range batch.Events {
		done = done || e.Type == queue.EventGroupCompleted && e.Group == "crawl"
		born = born || e.Type == queue.EventJobEnqueued && e.JobID == g.CompletionJobID && e.Queue == "reports" && e.Kind == "report"
	}
	if !done || !born {
		t.Fatalf("log %+v: group.completed %v, completion job's job.enqueued %v; want both", batch.Events, done, born)
	}
}
