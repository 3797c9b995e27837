package queue_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// slowLog is an event log whose cursor read outlasts any short wait, as a
// store does on a loaded machine.
type slowLog struct{ backend.EventLog }

func (slowLog) LastEventID(ctx context.Context) (string, error) {
	<-ctx.Done()
	return "", ctx.Err()
}

type slowLogBackend struct{ backend.Backend }

func (b slowLogBackend) Features() backend.Features {
	f := b.Backend.Features()
	f.Events = slowLog{f.Events}
	return f
}

// A wait that ends before the watcher has started still answers with the
// job (or group) as it is, as a wait that ends later does, not with the
// start's error.
func TestWaitEndsBeforeWatcherStarts(t *testing.T) {
	t.Parallel()
	real, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlitequeue.Options{Events: true})
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	c := queue.NewClient(slowLogBackend{real})
	ctx := context.Background()
	pending, err := c.Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k", Group: "g"})
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	j, err := c.Wait(short, pending.ID)
	if !errors.Is(err, context.DeadlineExceeded) || j == nil || j.ID != pending.ID || j.State != queue.StatePending {
		t.Fatalf("Wait = %+v, %v; want the pending job and context.DeadlineExceeded", j, err)
	}
	g, err := c.WaitGroup(short, "g")
	if !errors.Is(err, context.DeadlineExceeded) || g == nil || g.Done {
		t.Fatalf("WaitGroup = %+v, %v; want the open group and context.DeadlineExceeded", g, err)
	}
	if _, err := c.Wait(short, "no-such-job"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("Wait(unknown) = %v, want ErrNotFound", err)
	}
	// A final job is the answer, with no error.
	if _, err := c.Cancel(ctx, pending.ID); err != nil {
		t.Fatal(err)
	}
	if j, err := c.Wait(short, pending.ID); err != nil || j.State != queue.StateCancelled {
		t.Fatalf("Wait(cancelled) = %+v, %v; want the cancelled job, no error", j, err)
	}
}
