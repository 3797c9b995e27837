package pgqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// TestRetention checks that what the store keeps beside jobs goes with
// them or by its own bounds: a job's progress is deleted with the job,
// and PruneEvents deletes by age and by count, oldest first.
func TestRetention(t *testing.T) {
	ctx := context.Background()
	s, clk, ids := openEvents(t, 2)
	l, err := s.Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, Max: 1, LeaseFor: time.Minute})
	if err != nil || len(l) != 1 {
		t.Fatalf("Lease = %v, %v", l, err)
	}
	if err := s.SetProgress(ctx, l[0].Job.ID, l[0].Token, queue.Percent(50)); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, l[0].Job.ID, l[0].Token, nil); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Hour)
	if n, err := s.Cleanup(ctx, backend.CleanupRequest{Retention: queue.Retention{Completed: time.Hour}}); err != nil || n != 1 {
		t.Fatalf("Cleanup = %d, %v; want 1", n, err)
	}
	var left int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{s.Schema(), "job_progress"}.Sanitize()).Scan(&left); err != nil || left != 0 {
		t.Fatalf("progress rows after the job was deleted = %d, %v; want 0", left, err)
	}

	// Events: 2 enqueued, started, progress, completed, 2 hours old;
	// then one more, new.
	if _, err := queue.NewClient(s).Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k"}); err != nil {
		t.Fatal(err)
	}
	all := read(t, s, "")
	if len(all.Events) != 6 {
		t.Fatalf("%d events, want 6", len(all.Events))
	}
	steps := []struct {
		name      string
		olderThan time.Duration
		keep      int
		want      int // deleted
	}{
		{"none old enough", 3 * time.Hour, 0, 0},
		{"older than an hour, at most 2", time.Hour, 0, 2},
		{"the rest of the old ones", time.Hour, 0, 3},
		{"the newest kept", 24 * time.Hour, 1, 0},
	}
	for _, st := range steps {
		limit := 0
		if st.want == 2 {
			limit = 2
		}
		if n, err := s.PruneEvents(ctx, st.olderThan, st.keep, limit); err != nil || n != st.want {
			t.Errorf("%s: PruneEvents = %d, %v; want %d", st.name, n, err, st.want)
		}
	}
	rest := read(t, s, all.Events[0].ID)
	if !rest.Gap || len(rest.Events) != 1 || rest.Events[0].JobID == ids[0] {
		t.Errorf("after pruning: %+v (gap %v), want the newest event and a gap", rest.Events, rest.Gap)
	}
}
