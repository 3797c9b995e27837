package dashboard

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/ratelimit"
)

type fakeNow struct{ t time.Time }

func (f *fakeNow) now() time.Time          { return f.t }
func (f *fakeNow) advance(d time.Duration) { f.t = f.t.Add(d) }

func newFake() *fakeNow { return &fakeNow{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ev   ratelimit.Event
		want LimitCounts
	}{
		{"allowed", ratelimit.Event{Allowed: true, Decision: ratelimit.Decision{Allowed: true}}, LimitCounts{Allowed: 1}},
		{"denied", ratelimit.Event{}, LimitCounts{Denied: 1}},
		{"shadow", ratelimit.Event{Allowed: true, Shadow: true}, LimitCounts{Allowed: 1, ShadowDenied: 1}},
		{"fail open", ratelimit.Event{Allowed: true, FailureModeApplied: true, Err: &ratelimit.StoreError{Err: errors.New("down")}}, LimitCounts{Allowed: 1, StoreErrors: 1, FailureOpen: 1}},
		{"fail closed", ratelimit.Event{FailureModeApplied: true, Err: &ratelimit.StoreError{Err: errors.New("down")}}, LimitCounts{Denied: 1, StoreErrors: 1, FailureClosed: 1}},
		{"invalid", ratelimit.Event{Err: ratelimit.InvalidArgument("cost", "must not be negative")}, LimitCounts{Invalid: 1}},
	}
	for _, tt := range tests {
		if got := classify(tt.ev); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestLimitsSeries(t *testing.T) {
	t.Parallel()
	clk := newFake()
	a := NewActivity(ActivityOptions{Now: clk.now, Window: 5 * time.Second})
	allow := ratelimit.Event{Scene: "member", Policy: "chat", Allowed: true, Decision: ratelimit.Decision{Allowed: true}}
	deny := ratelimit.Event{Scene: "member", Policy: "chat"}
	a.ObserveLimit(allow)
	a.ObserveLimit(deny)
	clk.advance(2 * time.Second)
	a.ObserveLimit(allow)
	a.ObserveLimit(ratelimit.Event{Scene: "ip", Policy: "login", Allowed: true, Decision: ratelimit.Decision{Allowed: true}})

	r := a.Limits()
	if len(r.Policies) != 2 || r.Policies[0].Scene != "ip" || r.Policies[1].Scene != "member" {
		t.Fatalf("policies = %+v", r.Policies)
	}
	m := r.Policies[1]
	if got, want := fmt.Sprint(m.Series.Allowed, m.Series.Denied), "[0 0 1 0 1] [0 0 1 0 0]"; got != want {
		t.Errorf("series = %s, want %s", got, want)
	}
	if want := clk.t.Add(-4 * time.Second).Truncate(time.Second); !r.Start.Equal(want) {
		t.Errorf("start = %v, want %v", r.Start, want)
	}

	// Four seconds on, the first second has left the window but not the
	// totals.
	clk.advance(4 * time.Second)
	m = a.Limits().Policies[1]
	if got, want := fmt.Sprint(m.Series.Allowed, m.Window.Allowed, m.Totals.Allowed, m.Totals.Denied), "[1 0 0 0 0] 1 2 1"; got != want {
		t.Errorf("later = %s, want %s", got, want)
	}
	// A full lap later the ring's stale slots read as empty.
	clk.advance(5 * time.Second)
	if m := a.Limits().Policies[1]; m.Window != (LimitCounts{}) {
		t.Errorf("after a lap window = %+v, want zero", m.Window)
	}
}

func TestQueuesSeriesAndLatency(t *testing.T) {
	t.Parallel()
	clk := newFake()
	a := NewActivity(ActivityOptions{Now: clk.now, Window: 4 * time.Second, LatencyWindow: 2 * time.Second})
	a.JobEnqueued("mail", 3)
	for _, d := range []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 1 * time.Second} {
		a.JobStarted("mail", d)
	}
	clk.advance(time.Second)
	a.JobEnded("mail", queue.StateCompleted)
	a.JobEnded("mail", queue.StateFailed)
	a.JobEnded("mail", queue.StateRetrying)
	a.JobEnded("mail", queue.StatePending) // ignored
	clk.advance(2 * time.Second)

	q := a.Queues().Queues[0]
	if got, want := fmt.Sprint(q.Series.Started, q.Series.Finished, q.Series.Failed), "[3 0 0 0] [0 2 0 0] [0 1 0 0]"; got != want {
		t.Errorf("series = %s, want %s", got, want)
	}
	if want := (JobCounts{Enqueued: 3, Started: 3, Completed: 1, Failed: 1, Retried: 1}); q.Totals != want {
		t.Errorf("totals = %+v, want %+v", q.Totals, want)
	}
	// The starts were in the first point; with a 2 s latency window the
	// second point still sees them, the third no longer does.
	p50 := q.Series.LatencyP50MS
	if p50[0] == nil || p50[1] == nil || p50[2] != nil || p50[3] != nil {
		t.Fatalf("p50 presence = %v", p50)
	}
	if q.Latency.Samples != 3 || !near(*q.Latency.P50MS, 20) || !near(*q.Latency.P99MS, 1000) {
		t.Errorf("latency = %d %v %v", q.Latency.Samples, *q.Latency.P50MS, *q.Latency.P99MS)
	}
}

func near(got, want float64) bool { return got >= want*0.91 && got <= want*1.09 }

func TestQuantileWithinNinePercent(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{150 * time.Microsecond, time.Millisecond, 7 * time.Millisecond, 333 * time.Millisecond, 42 * time.Second, time.Hour} {
		var h hist
		h.add(d)
		got := *h.quantile(0.5)
		if want := float64(d) / float64(time.Millisecond); !near(got, want) {
			t.Errorf("%v: got %v ms", d, got)
		}
	}
	var h hist
	if h.quantile(0.5) != nil {
		t.Error("empty histogram has a quantile")
	}
	for i := 1; i <= 100; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	if p50, p99 := *h.quantile(0.5), *h.quantile(0.99); !near(p50, 50) || !near(p99, 99) {
		t.Errorf("p50 = %v, p99 = %v", p50, p99)
	}
}

func TestNilActivityRecordsNothing(t *testing.T) {
	t.Parallel()
	var a *Activity
	a.ObserveLimit(ratelimit.Event{})
	a.JobEnqueued("q", 1)
	a.JobStarted("q", time.Second)
	a.JobEnded("q", queue.StateCompleted)
}
