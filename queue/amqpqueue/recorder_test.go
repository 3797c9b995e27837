package amqpqueue

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func recJob(id, q string, s queue.State, finished time.Time) *queue.Job {
	return &queue.Job{ID: id, JobSpec: queue.JobSpec{Queue: q, Kind: "k"}, State: s, FinishedAt: finished}
}

func TestMemoryRecorderBounds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := NewMemoryRecorder(MemoryRecorderOptions{MaxJobs: 3})
	for i := 0; i < 5; i++ {
		_ = r.Record(ctx, recJob(fmt.Sprint(i), "q", queue.StatePending, time.Time{}))
	}
	// Updating job 2 makes it the most recent; 3 is now the oldest.
	_ = r.Record(ctx, recJob("2", "q", queue.StateActive, time.Time{}))
	_ = r.Record(ctx, recJob("5", "q", queue.StatePending, time.Time{}))
	for id, want := range map[string]bool{"0": false, "1": false, "2": true, "3": false, "4": true, "5": true} {
		_, err := r.Lookup(ctx, id)
		if got := err == nil; got != want {
			t.Errorf("Lookup(%s) kept = %v, want %v (err %v)", id, got, want, err)
		}
		if err != nil && !errors.Is(err, queue.ErrNotFound) {
			t.Errorf("Lookup(%s) error = %v, want ErrNotFound", id, err)
		}
	}
	if r.Len() != 3 {
		t.Fatalf("Len = %d, want 3", r.Len())
	}
	counts, _ := r.CountStates(ctx)
	if counts["q"][queue.StatePending] != 2 || counts["q"][queue.StateActive] != 1 {
		t.Fatalf("CountStates = %v, want 2 pending 1 active", counts)
	}

	// By bytes: a 1 KiB budget keeps only the newest big job.
	rb := NewMemoryRecorder(MemoryRecorderOptions{MaxBytes: 1024})
	for i := 0; i < 3; i++ {
		j := recJob(fmt.Sprint(i), "q", queue.StatePending, time.Time{})
		j.Payload = make([]byte, 600)
		_ = rb.Record(ctx, j)
	}
	if rb.Len() != 1 {
		t.Fatalf("byte-bounded Len = %d, want 1", rb.Len())
	}
	if _, err := rb.Lookup(ctx, "2"); err != nil {
		t.Fatalf("newest job evicted: %v", err)
	}
}

func TestMemoryRecorderLookupCopies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := NewMemoryRecorder(MemoryRecorderOptions{})
	_ = r.Record(ctx, recJob("a", "q", queue.StatePending, time.Time{}))
	got, _ := r.Lookup(ctx, "a")
	got.State = queue.StateFailed
	again, _ := r.Lookup(ctx, "a")
	if again.State != queue.StatePending {
		t.Fatalf("changing a looked-up job changed the record: %s", again.State)
	}
}

func TestMemoryRecorderCleanup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(epoch)
	r := NewMemoryRecorder(MemoryRecorderOptions{Clock: clk})
	_ = r.Record(ctx, recJob("done", "q", queue.StateCompleted, epoch))
	_ = r.Record(ctx, recJob("failed", "q", queue.StateFailed, epoch))
	_ = r.Record(ctx, recJob("other", "o", queue.StateCompleted, epoch))
	_ = r.Record(ctx, recJob("live", "q", queue.StatePending, time.Time{}))
	ret := queue.Retention{}.WithDefaults()
	cases := []struct {
		name    string
		advance time.Duration
		req     backend.CleanupRequest
		want    int
		left    int
	}{
		{"before 24h", 24*time.Hour - time.Second, backend.CleanupRequest{Retention: ret}, 0, 4},
		{"other queue only", time.Second, backend.CleanupRequest{Retention: ret, Queues: []string{"o"}}, 1, 3},
		{"at 24h", 0, backend.CleanupRequest{Retention: ret}, 1, 2},
		{"failed kept forever", 7 * 24 * time.Hour, backend.CleanupRequest{Retention: queue.Retention{Completed: -1, Failed: -1, Cancelled: -1}}, 0, 2},
		{"failed after 7d", 0, backend.CleanupRequest{Retention: ret, Limit: 5}, 1, 1},
	}
	for _, c := range cases {
		clk.Advance(c.advance)
		n, err := r.Cleanup(ctx, c.req)
		if err != nil || n != c.want || r.Len() != c.left {
			t.Fatalf("%s: Cleanup = %d, %v, %d left; want %d, %d left", c.name, n, err, r.Len(), c.want, c.left)
		}
	}
	if _, err := r.Lookup(ctx, "live"); err != nil {
		t.Fatalf("a live job was cleaned: %v", err)
	}
}

func ExampleMemoryRecorder() {
	ctx := context.Background()
	r := NewMemoryRecorder(MemoryRecorderOptions{MaxJobs: 1000})
	_ = r.Record(ctx, &queue.Job{ID: "j1", JobSpec: queue.JobSpec{Queue: "scrape", Kind: "page"}, State: queue.StateCompleted, Result: []byte("ok")})
	j, _ := r.Lookup(ctx, "j1")
	fmt.Println(j.State, string(j.Result))
	_, err := r.Lookup(ctx, "j2")
	fmt.Println(errors.Is(err, queue.ErrNotFound))
	// Output:
	// completed ok
	// true
}
