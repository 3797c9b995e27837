package queue_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// countingProgress counts the progress writes that reach the backend,
// and those the backend has finished.
type countingProgress struct {
	*sqlitequeue.Backend
	writes, landed atomic.Int64
}

func (c *countingProgress) Features() backend.Features {
	f := c.Backend.Features()
	f.Progress = c
	return f
}

func (c *countingProgress) SetProgress(ctx context.Context, id, token string, p queue.JobProgress) error {
	c.writes.Add(1)
	defer c.landed.Add(1)
	return c.Backend.SetProgress(ctx, id, token, p)
}

// progressWorker runs a worker on a fake clock over a counting backend,
// with h handling kind "k", and returns the backend, the clock and the
// enqueued job's id.
func progressWorker(t *testing.T, h queue.HandlerFunc) (*countingProgress, *clock.Fake, string) {
	t.Helper()
	inner, done := openExample()
	t.Cleanup(done)
	b := &countingProgress{Backend: inner}
	clk := clock.NewFake(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	j, err := queue.NewClient(b).Enqueue(context.Background(), queue.JobSpec{Queue: "q", Kind: "k"})
	if err != nil {
		t.Fatal(err)
	}
	w := queue.NewWorker(b, queue.WorkerConfig{Queues: []string{"q"}, Clock: clk, LeaseFor: time.Hour,
		Logger: slog.New(slog.DiscardHandler)})
	w.Handle("k", h)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	t.Cleanup(func() {
		// A timer still armed on the fake clock (a poll, a grace period)
		// would hold Run: move time on until it returns.
		cancel()
		for {
			select {
			case <-ran:
				return
			case <-time.After(20 * time.Millisecond):
				clk.Advance(time.Hour)
			}
		}
	})
	return b, clk, j.ID
}

func finalJob(t *testing.T, b backend.Backend, id string) *queue.Job {
	t.Helper()
	var j *queue.Job
	testutil.Eventually(t, "the job completes", func() error {
		var err error
		if j, err = b.Get(context.Background(), id); err == nil && j.State != queue.StateCompleted {
			err = errors.New("state " + string(j.State))
		}
		return err
	})
	return j
}

// TestProgressCoalesced: a handler reporting in a tight loop writes once
// at once and once more before its outcome, and the last report lands.
func TestProgressCoalesced(t *testing.T) {
	t.Parallel()
	b, _, id := progressWorker(t, func(ctx context.Context, j *queue.Job) ([]byte, error) {
		for i := 0; i <= 1000; i++ {
			if err := j.ReportProgress(ctx, queue.Percent(float64(i)/10)); err != nil {
				return nil, err
			}
		}
		return nil, nil
	})
	j := finalJob(t, b, id)
	if n := b.writes.Load(); n != 2 {
		t.Errorf("progress writes = %d, want 2 (the first report, then the last before the outcome)", n)
	}
	if j.Progress == nil || j.Progress.Percent == nil || *j.Progress.Percent != 100 {
		t.Errorf("Progress = %+v, want the last report (100%%)", j.Progress)
	}
}

// TestProgressWrittenWhenIntervalEnds: a report inside the interval is
// written when it ends, while the handler still runs.
func TestProgressWrittenWhenIntervalEnds(t *testing.T) {
	t.Parallel()
	reported, release := make(chan struct{}), make(chan struct{})
	b, clk, id := progressWorker(t, func(ctx context.Context, j *queue.Job) ([]byte, error) {
		_ = j.ReportProgress(ctx, queue.Percent(10))
		_ = j.ReportProgress(ctx, queue.Percent(20).WithData(map[string]string{"step": "two"}))
		close(reported)
		<-release
		return nil, nil
	})
	<-reported
	if n := b.writes.Load(); n != 1 {
		t.Fatalf("writes before the interval ends = %d, want 1", n)
	}
	clk.Advance(queue.ProgressEvery)
	testutil.Eventually(t, "the coalesced report is written", func() bool { return b.landed.Load() == 2 })
	j, err := b.Get(context.Background(), id)
	if err != nil || j.Progress == nil || *j.Progress.Percent != 20 || string(j.Progress.Data) != `{"step":"two"}` {
		t.Fatalf("Progress while running = %+v, %v; want 20%% with step two", j.Progress, err)
	}
	close(release)
	finalJob(t, b, id)
	if n := b.writes.Load(); n != 2 {
		t.Errorf("writes = %d, want 2: nothing was left to write at the end", n)
	}
}

func TestReportProgressRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if err := queue.ReportProgress(ctx, queue.Percent(1)); !errors.Is(err, queue.ErrNotInHandler) {
		t.Errorf("outside a handler: %v, want ErrNotInHandler", err)
	}
	cases := []struct {
		name  string
		p     queue.JobProgress
		field string
	}{
		{"empty", queue.JobProgress{}, "JobProgress.Percent"},
		{"over 100", queue.Percent(100.5), "JobProgress.Percent"},
		{"negative", queue.Percent(-1), "JobProgress.Percent"},
		{"not an object", queue.Percent(1).WithData([]int{1}), "JobProgress.Data"},
		{"not JSON", queue.Percent(1).WithData(func() {}), "JobProgress.Data"},
		{"too big", queue.Percent(1).WithData(map[string]string{"x": string(make([]byte, queue.MaxProgressBytes))}), "JobProgress.Data"},
	}
	for _, c := range cases {
		var ia *queue.InvalidArgumentError
		if err := c.p.Validate(); !errors.As(err, &ia) || ia.Field != c.field {
			t.Errorf("%s: Validate = %v, want an error naming %s", c.name, err, c.field)
		}
	}
	if err := queue.Percent(0).WithData(map[string]int{"a": 1}).Validate(); err != nil {
		t.Errorf("valid report: %v", err)
	}
}
