package amqpqueue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

func leaseN(t *testing.T, b *Backend, max int, queues ...string) []queue.Lease {
	t.Helper()
	ls, err := b.Lease(bg(), backend.LeaseRequest{Queues: queues, WorkerID: "w", Max: max, LeaseFor: time.Minute})
	if err != nil {
		t.Fatalf("Lease: %v", err)
	}
	return ls
}

// TestJobRoundTrip checks that a job's fields survive the broker, and what
// Get says along the way.
func TestJobRoundTrip(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(epoch)
	b := open(t, Options{Clock: clk, LeaseWait: 500 * time.Millisecond})
	c := queue.NewClient(b)
	spec := queue.JobSpec{Queue: "mail", Kind: "send", Payload: []byte{0, 1, 2, 'x'}, Tenant: "acme", Timeout: time.Minute, MaxAttempts: 7}
	j, err := c.Enqueue(bg(), spec)
	if err != nil {
		t.Fatal(err)
	}
	later, err := c.Enqueue(bg(), queue.JobSpec{Queue: "mail", Kind: "send", RunAt: epoch.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Get(bg(), later.ID); got == nil || got.State != queue.StateScheduled {
		t.Fatalf("Get(delayed) = %+v, want scheduled", got)
	}
	got, err := b.Get(bg(), j.ID)
	if err != nil || got.State != queue.StatePending || !got.CreatedAt.Equal(epoch) {
		t.Fatalf("Get after Enqueue = %+v, %v; want pending, created at epoch", got, err)
	}
	if _, err := b.Get(bg(), "no-such-job"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("Get(missing) = %v, want ErrNotFound", err)
	}
	clk.Advance(time.Second)
	ls := leaseN(t, b, 5, "mail")
	if len(ls) != 1 {
		t.Fatalf("leased %d jobs, want 1 (the other is delayed)", len(ls))
	}
	l := ls[0].Job
	checks := []struct {
		name      string
		got, want any
	}{
		{"ID", l.ID, j.ID},
		{"Queue", l.Queue, "mail"},
		{"Kind", l.Kind, "send"},
		{"Tenant", l.Tenant, "acme"},
		{"Timeout", l.Timeout, time.Minute},
		{"MaxAttempts", l.MaxAttempts, 7},
		{"Attempt", l.Attempt, 1},
		{"State", l.State, queue.StateActive},
		{"CreatedAt", l.CreatedAt.Equal(epoch), true},
		{"StartedAt", l.StartedAt.Equal(epoch.Add(time.Second)), true},
		{"LeaseUntil", l.LeaseUntil.Equal(epoch.Add(time.Second + time.Minute)), true},
		{"WorkerID", l.WorkerID, "w"},
		{"Payload", bytes.Equal(l.Payload, spec.Payload), true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("leased %s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if a, _ := b.Get(bg(), j.ID); a.State != queue.StateActive || a.WorkerID != "w" {
		t.Fatalf("Get while leased = %s by %q, want active by w", a.State, a.WorkerID)
	}
	if err := b.Complete(bg(), j.ID, ls[0].Token, []byte("r")); err != nil {
		t.Fatal(err)
	}
	if d, _ := b.Get(bg(), j.ID); d.State != queue.StateCompleted || string(d.Result) != "r" || !d.FinishedAt.Equal(epoch.Add(time.Second)) {
		t.Fatalf("Get after Complete = %+v", d)
	}
}

// TestUnsupported: what the lane lacks is refused with a clear error, and
// nothing is stored.
func TestUnsupported(t *testing.T) {
	t.Parallel()
	b := open(t, Options{})
	c := queue.NewClient(b)
	specs := []struct {
		name  string
		spec  queue.JobSpec
		field string
	}{
		{"unique", queue.JobSpec{Queue: "q", Kind: "k", UniqueKey: "u"}, "JobSpec.UniqueKey"},
		{"group", queue.JobSpec{Queue: "q", Kind: "k", Group: "crawl-1"}, "JobSpec.Group"},
		{"priority", queue.JobSpec{Queue: "q", Kind: "k", Priority: 2}, "JobSpec.Priority"},
		{"depends on", queue.JobSpec{Queue: "q", Kind: "k", DependsOn: []string{"x"}}, "JobSpec.DependsOn"},
	}
	for _, s := range specs {
		_, err := c.Enqueue(bg(), s.spec)
		var ue *queue.UnsupportedError
		if !errors.As(err, &ue) || !errors.Is(err, queue.ErrUnsupported) || ue.Field != s.field || ue.Backend != "amqpqueue" {
			t.Errorf("%s: Enqueue error = %v, want *UnsupportedError for %s", s.name, err, s.field)
		}
	}
	if n, _ := b.topo.inspect(bg(), b.mainName("q")); n != 0 {
		t.Fatalf("%d messages stored after refused enqueues", n)
	}
	if _, err := c.List(bg(), queue.ListFilter{}); !errors.Is(err, queue.ErrUnsupported) {
		t.Errorf("List error = %v, want ErrUnsupported", err)
	}
	j, err := c.Enqueue(bg(), queue.JobSpec{Queue: "q", Kind: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Cancel(bg(), j.ID); !errors.Is(err, queue.ErrUnsupported) {
		t.Errorf("Cancel(pending) error = %v, want ErrUnsupported", err)
	}
	if _, err := c.Cancel(bg(), "no-such-job"); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("Cancel(missing) error = %v, want ErrNotFound", err)
	}
	var ue *queue.UnsupportedError
	if _, err := c.Retry(bg(), j.ID); !errors.As(err, &ue) || ue.Feature != queue.CapRetry || ue.Backend != "amqpqueue" {
		t.Errorf("Retry error = %v, want *UnsupportedError for %s", err, queue.CapRetry)
	}
	caps := []struct {
		name       string
		priorities int
		want       queue.Capabilities
	}{
		{"quorum", 0, queue.NewCapabilities(queue.CapDelay)},
		{"priority", 10, queue.NewCapabilities(queue.CapDelay, queue.CapPriority)},
	}
	for _, cc := range caps {
		bb := &Backend{opts: Options{Priorities: cc.priorities}}
		if got := backend.CapabilitiesOf(bb); got != cc.want {
			t.Errorf("%s: Capabilities = %v, want %v", cc.name, got, cc.want)
		}
	}
}

// TestPriorityOrder: in priority mode the broker hands out the most urgent
// job first, and jobs of one priority in enqueue order.
func TestPriorityOrder(t *testing.T) {
	t.Parallel()
	b := open(t, Options{Priorities: 10, LeaseWait: 2 * time.Second})
	c := queue.NewClient(b)
	prios := []int{5, 5, 0, 3, 12, 0}
	ids := make([]string, len(prios))
	for i, p := range prios {
		j, err := c.Enqueue(bg(), queue.JobSpec{Queue: "p", Kind: "k", Priority: p})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = j.ID
	}
	want := []string{ids[2], ids[5], ids[3], ids[0], ids[1], ids[4]}
	var got []string
	for len(got) < len(want) {
		ls := leaseN(t, b, len(want)-len(got), "p")
		if len(ls) == 0 {
			t.Fatalf("leased %v, then nothing", got)
		}
		for _, l := range ls {
			got = append(got, l.Job.ID)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("lease order = %v, want %v", got, want)
	}
}

// TestStats counts from the broker, the buffer, the leases and the
// recorder.
func TestStats(t *testing.T) {
	t.Parallel()
	b := open(t, Options{LeaseWait: 2 * time.Second, Prefetch: 10})
	c := queue.NewClient(b)
	var first *queue.Job
	for i := 0; i < 3; i++ {
		j, err := c.Enqueue(bg(), queue.JobSpec{Queue: "s", Kind: "k"})
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = j
		}
	}
	if _, err := c.Enqueue(bg(), queue.JobSpec{Queue: "s", Kind: "k", RunAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	// Deliveries move from the broker to this process's buffer on their
	// own; counts are checked once they settle.
	want := func(what string, w map[queue.State]int64) {
		t.Helper()
		testutil.Eventually(t, fmt.Sprintf("%s: Stats of queue s with %v", what, w), func() error {
			st, err := b.Stats(bg())
			if err != nil || len(st) != 1 || st[0].Queue != "s" {
				return fmt.Errorf("Stats = %+v, %v", st, err)
			}
			for s, n := range w {
				if st[0].Counts[s] != n {
					return fmt.Errorf("Stats = %+v", st)
				}
			}
			return nil
		})
	}
	want("after enqueue", map[queue.State]int64{queue.StatePending: 3, queue.StateScheduled: 1, queue.StateActive: 0})
	ls := leaseN(t, b, 1, "s")
	if len(ls) != 1 {
		t.Fatalf("leased %d", len(ls))
	}
	want("leased", map[queue.State]int64{queue.StatePending: 2, queue.StateScheduled: 1, queue.StateActive: 1})
	if err := b.Complete(bg(), ls[0].Job.ID, ls[0].Token, nil); err != nil {
		t.Fatal(err)
	}
	want("completed", map[queue.State]int64{queue.StatePending: 2, queue.StateActive: 0, queue.StateCompleted: 1})
}

// TestSharedRecorder: with a recorder shared by all processes, the one
// that enqueued a job sees the outcome recorded by the one that ran it.
func TestSharedRecorder(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	rc := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rc.Close() })
	rec, err := NewRedisRecorder(rc, RedisRecorderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	producer := open(t, Options{Recorder: rec})
	worker := open(t, Options{Prefix: producer.opts.Prefix, Recorder: rec})
	j, err := queue.NewClient(producer).Enqueue(bg(), queue.JobSpec{Queue: "s", Kind: "k"})
	if err != nil {
		t.Fatal(err)
	}
	w := queue.NewWorker(worker, queue.WorkerConfig{Queues: []string{"s"}, Logger: quiet, PollInterval: 10 * time.Millisecond})
	w.Handle("k", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) { return []byte("done"), nil }))
	testutil.Start(t, w)
	waitState(t, producer, j.ID, queue.StateCompleted)
	if got, _ := producer.Get(bg(), j.ID); string(got.Result) != "done" {
		t.Fatalf("result = %q", got.Result)
	}
}

// TestExistingQueues: a dead-letter queue declared earlier with other
// limits is used as it is; a main queue of another type is an error naming
// the queue.
func TestExistingQueues(t *testing.T) {
	t.Parallel()
	first := open(t, Options{DeadLetterMax: 10, MaxRedeliveries: 5})
	if _, err := queue.NewClient(first).Enqueue(bg(), queue.JobSpec{Queue: "e", Kind: "k"}); err != nil {
		t.Fatal(err)
	}
	again := open(t, Options{Prefix: first.opts.Prefix, DeadLetterMax: 20, DeadLetterTTL: time.Hour, MaxRedeliveries: 7})
	if _, err := queue.NewClient(again).Enqueue(bg(), queue.JobSpec{Queue: "e", Kind: "k"}); err != nil {
		t.Fatalf("Enqueue with other limits: %v", err)
	}
	prio := open(t, Options{Prefix: first.opts.Prefix, Priorities: 5})
	_, err := queue.NewClient(prio).Enqueue(bg(), queue.JobSpec{Queue: "e", Kind: "k"})
	if err == nil || !strings.Contains(err.Error(), first.mainName("e")) || !strings.Contains(err.Error(), "PRECONDITION_FAILED") {
		t.Fatalf("Enqueue in priority mode onto a quorum queue = %v, want the broker's refusal", err)
	}
}
