package overload

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeSource returns the reading (or error) it was last given.
type fakeSource struct {
	mu    sync.Mutex
	r     Reading
	err   error
	reads int
}

func (f *fakeSource) Name() string { return "fake" }

func (f *fakeSource) Read(context.Context) (Reading, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return f.r, f.err
}

func (f *fakeSource) set(r Reading, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.r, f.err = r, err
}

func (f *fakeSource) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newTestMonitor(t *testing.T, cfg Config) (*Monitor, *fakeSource, *clock.Fake, *bytes.Buffer) {
	t.Helper()
	src, clk, logs := &fakeSource{}, clock.NewFake(epoch), &bytes.Buffer{}
	cfg.Source, cfg.Clock = src, clk
	cfg.Logger = slog.New(slog.NewTextHandler(&syncWriter{w: logs}, nil))
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m, src, clk, logs
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// step is one sample: the clock advances by after, the CPU counter by
// used (2 CPUs), memory reads mem out of 1000.
type step struct {
	after    time.Duration
	used     time.Duration
	mem      uint64
	err      error
	wantCPU  float64 // -1: unknown
	wantOver bool
	wantWhy  string // substring of the reason
}

func TestMonitorThresholdsAndHysteresis(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	cases := []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{"memory with hysteresis", Config{}, []step{
			{mem: 790, wantCPU: -1},
			{after: time.Second, mem: 800, wantCPU: 0, wantOver: true, wantWhy: "memory 80% (threshold 80%)"},
			{after: time.Second, mem: 760, wantCPU: 0, wantOver: true, wantWhy: "memory 76%"},
			{after: time.Second, mem: 750, wantCPU: 0, wantOver: true},
			{after: time.Second, mem: 749, wantCPU: 0},
			{after: time.Second, mem: 790, wantCPU: 0},
		}},
		{"cpu averaged over the interval", Config{}, []step{
			{mem: 100, wantCPU: -1},
			{after: time.Second, used: 1700 * time.Millisecond, mem: 100, wantCPU: 0.85, wantOver: true, wantWhy: "cpu 85%"},
			{after: 2 * time.Second, used: 3200 * time.Millisecond, mem: 100, wantCPU: 0.8, wantOver: true},
			{after: time.Second, used: 1400 * time.Millisecond, mem: 100, wantCPU: 0.7},
		}},
		{"both over", Config{}, []step{
			{mem: 900, wantCPU: -1, wantOver: true, wantWhy: "memory 90%"},
			{after: time.Second, used: 2 * time.Second, mem: 900, wantCPU: 1, wantOver: true, wantWhy: "cpu 100% (threshold 80%), memory 90%"},
		}},
		{"custom thresholds, no hysteresis", Config{CPU: 0.5, Memory: 0.95, Hysteresis: -1}, []step{
			{mem: 940, wantCPU: -1},
			{after: time.Second, used: time.Second, mem: 940, wantCPU: 0.5, wantOver: true, wantWhy: "cpu 50% (threshold 50%)"},
			{after: time.Second, used: 998 * time.Millisecond, mem: 940, wantCPU: 0.499},
		}},
		{"checks off", Config{CPU: -1, Memory: -1}, []step{
			{mem: 1000, wantCPU: -1},
			{after: time.Second, used: 2 * time.Second, mem: 1000, wantCPU: 1},
		}},
		{"a read fault clears the overload", Config{}, []step{
			{mem: 900, wantCPU: -1, wantOver: true},
			{after: time.Second, err: boom, wantCPU: -1},
			{after: time.Second, mem: 100, wantCPU: -1},
			{after: time.Second, used: 1800 * time.Millisecond, mem: 100, wantCPU: 0.9, wantOver: true},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m, src, clk, _ := newTestMonitor(t, c.cfg)
			var used time.Duration
			for i, st := range c.steps {
				clk.Advance(st.after)
				used += st.used
				src.set(Reading{CPUUsed: used, CPUs: 2, MemoryUsed: st.mem, MemoryLimit: 1000}, st.err)
				s, err := m.Sample(context.Background())
				if !errors.Is(err, st.err) || !errors.Is(s.Err, st.err) {
					t.Fatalf("step %d: error %v / %v, want %v", i, err, s.Err, st.err)
				}
				if st.wantCPU < 0 && s.CPUKnown || st.wantCPU >= 0 && (!s.CPUKnown || abs(s.CPU-st.wantCPU) > 1e-9) {
					t.Errorf("step %d: cpu %v (known %v), want %v", i, s.CPU, s.CPUKnown, st.wantCPU)
				}
				over, why := m.Overloaded()
				if over != st.wantOver || !strings.Contains(why, st.wantWhy) || (!over && why != "") {
					t.Errorf("step %d: overloaded %v %q, want %v %q", i, over, why, st.wantOver, st.wantWhy)
				}
				if !s.At.Equal(clk.Now()) || s.Source != "fake" {
					t.Errorf("step %d: snapshot at %v from %q", i, s.At, s.Source)
				}
			}
		})
	}
}

func abs(f float64) float64 { return max(f, -f) }

func TestMonitorHostCPUTotal(t *testing.T) {
	t.Parallel()
	// A source that counts available time itself is not judged by the
	// monitor's clock.
	m, src, _, _ := newTestMonitor(t, Config{})
	src.set(Reading{CPUUsed: 10 * time.Second, CPUTotal: 40 * time.Second, CPUs: 4, MemoryLimit: 1}, nil)
	_, _ = m.Sample(context.Background())
	src.set(Reading{CPUUsed: 13 * time.Second, CPUTotal: 44 * time.Second, CPUs: 4, MemoryLimit: 1}, nil)
	s, _ := m.Sample(context.Background())
	if !s.CPUKnown || s.CPU != 0.75 || s.Overloaded() {
		t.Errorf("got cpu %v known %v overloaded %v, want 0.75 not overloaded", s.CPU, s.CPUKnown, s.Overloaded())
	}
}

func TestMonitorLogsTransitionsOnce(t *testing.T) {
	t.Parallel()
	m, src, clk, logs := newTestMonitor(t, Config{})
	for _, mem := range []uint64{900, 900, 900, 100, 100, 900} {
		clk.Advance(time.Second)
		src.set(Reading{CPUs: 1, MemoryUsed: mem, MemoryLimit: 1000}, nil)
		_, _ = m.Sample(context.Background())
	}
	for i := 0; i < 3; i++ {
		src.set(Reading{}, errors.New("gone"))
		_, _ = m.Sample(context.Background())
	}
	out := logs.String()
	for msg, want := range map[string]int{"overload: overloaded": 2, "overload: load back under thresholds": 2, "overload: cannot read load": 1} {
		if got := strings.Count(out, msg); got != want {
			t.Errorf("%q logged %d times, want %d:\n%s", msg, got, want, out)
		}
	}
}

func TestMonitorRun(t *testing.T) {
	t.Parallel()
	m, src, clk, _ := newTestMonitor(t, Config{Interval: 5 * time.Second})
	src.set(Reading{CPUs: 1, MemoryUsed: 950, MemoryLimit: 1000}, nil)
	stop := testutil.Start(t, m)
	clk.BlockUntil(1) // first sample taken, waiting for the interval
	if over, _ := m.Overloaded(); !over || src.count() != 1 {
		t.Fatalf("after the first sample: overloaded %v, reads %d", over, src.count())
	}
	src.set(Reading{CPUs: 1, MemoryUsed: 10, MemoryLimit: 1000}, nil)
	clk.Advance(5 * time.Second)
	clk.BlockUntil(1) // the fired timer is gone: this is the next one
	if src.count() != 2 {
		t.Fatalf("reads %d, want 2", src.count())
	}
	if over, why := m.Overloaded(); over {
		t.Errorf("after the second sample: overloaded (%s)", why)
	}
	stop()
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{CPU: 1.5}, "overload: Config.CPU must be at most 1"},
		{Config{Memory: 80}, "overload: Config.Memory must be at most 1"},
		{Config{Hysteresis: 2}, "overload: Config.Hysteresis must be at most 1"},
		{Config{Interval: -time.Second}, "overload: Config.Interval must not be negative"},
	}
	for _, c := range cases {
		c.cfg.Source = &fakeSource{}
		_, err := New(c.cfg)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.cfg, err, c.want)
		}
	}
	m, err := New(Config{Source: &fakeSource{}})
	if err != nil {
		t.Fatal(err)
	}
	if m.cfg.CPU != DefaultThreshold || m.cfg.Memory != DefaultThreshold || m.cfg.Hysteresis != DefaultHysteresis || m.cfg.Interval != DefaultInterval {
		t.Errorf("defaults: got %+v", m.cfg)
	}
	if over, why := m.Overloaded(); over || why != "" {
		t.Errorf("before any sample: got %v %q, want not overloaded", over, why)
	}
}
