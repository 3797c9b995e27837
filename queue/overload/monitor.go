package overload

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/clock"
)

// Defaults of Config.
const (
	DefaultThreshold  = 0.80
	DefaultHysteresis = 0.05
	DefaultInterval   = time.Second
)

// Config configures a Monitor. The zero value is the default.
type Config struct {
	// CPU is the share of the available CPU time (0 to 1) at or above
	// which the monitor is overloaded; default 0.80. A negative value
	// turns the CPU check off.
	CPU float64
	// Memory is the share of the memory limit (0 to 1) at or above which
	// the monitor is overloaded; default 0.80. A negative value turns the
	// memory check off.
	Memory float64
	// Hysteresis is how far (0 to 1) a figure must fall below its
	// threshold before an overload clears; default 0.05. A negative
	// value means none: the overload clears as soon as the figure is
	// below its threshold.
	Hysteresis float64
	// Interval is the time between samples taken by Run, and the span CPU
	// usage is averaged over; default 1s.
	Interval time.Duration
	// Source is what is read; default DefaultSource() (the process's
	// cgroup v2, else the host).
	Source Source
	// Clock dates samples and drives Run; default the real clock.
	Clock clock.Clock
	// Logger receives overload transitions and read faults; default
	// slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	for _, f := range []struct {
		name string
		v    *float64
		def  float64
	}{{"CPU", &c.CPU, DefaultThreshold}, {"Memory", &c.Memory, DefaultThreshold}, {"Hysteresis", &c.Hysteresis, DefaultHysteresis}} {
		switch {
		case *f.v == 0:
			*f.v = f.def
		case *f.v < 0:
			*f.v = -1 // off (thresholds) or none (hysteresis)
		case *f.v > 1:
			return c, fmt.Errorf("overload: Config.%s must be at most 1 (a share), got %v", f.name, *f.v)
		}
	}
	c.Hysteresis = max(c.Hysteresis, 0)
	if c.Interval < 0 {
		return c, fmt.Errorf("overload: Config.Interval must not be negative, got %s", c.Interval)
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Source == nil {
		c.Source = DefaultSource()
	}
	c.Clock = clock.Or(c.Clock)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

// Snapshot is the outcome of one sample.
type Snapshot struct {
	// At is when the sample was taken; zero before the first one.
	At time.Time
	// Source names what was read.
	Source string
	// CPU is the share of the available CPU time used since the previous
	// sample; CPUKnown is false until there are two samples.
	CPU      float64
	CPUKnown bool
	// CPUs is the CPU capacity the share is of.
	CPUs float64
	// Memory is MemoryUsed over MemoryLimit.
	Memory      float64
	MemoryUsed  uint64
	MemoryLimit uint64
	// CPUOver and MemoryOver say which figure holds the overload (with
	// hysteresis applied).
	CPUOver, MemoryOver bool
	// Reason says why the snapshot is overloaded, such as
	// "cpu 93% (threshold 80%)"; empty when it is not.
	Reason string
	// Err is the read fault of this sample, if any. A sample that could
	// not be read clears the overload: a monitor that cannot see must not
	// stop the queue.
	Err error
}

// Overloaded reports whether either figure holds an overload.
func (s Snapshot) Overloaded() bool { return s.CPUOver || s.MemoryOver }

func (s Snapshot) reason(cfg Config) string {
	switch {
	case s.CPUOver && s.MemoryOver:
		return fmt.Sprintf("cpu %s, memory %s", pct(s.CPU, cfg.CPU), pct(s.Memory, cfg.Memory))
	case s.CPUOver:
		return "cpu " + pct(s.CPU, cfg.CPU)
	case s.MemoryOver:
		return "memory " + pct(s.Memory, cfg.Memory)
	}
	return ""
}

func pct(v, threshold float64) string {
	return fmt.Sprintf("%.0f%% (threshold %.0f%%)", v*100, threshold*100)
}
