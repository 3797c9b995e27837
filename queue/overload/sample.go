package overload

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Monitor samples a Source and says whether the machine is overloaded.
// It is safe for concurrent use; Overloaded and Snapshot never block on a
// sample being taken.
type Monitor struct {
	cfg Config

	sampling sync.Mutex // one sample at a time
	prev     Reading
	prevAt   time.Time
	havePrev bool

	snap atomic.Pointer[Snapshot] // the last sample; read without locks
}

// New returns a monitor, or an error naming a Config field out of range.
// It takes no sample: call Run (or Sample) for it to see anything; until
// then it reports no overload.
func New(cfg Config) (*Monitor, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	m := &Monitor{cfg: cfg}
	m.snap.Store(&Snapshot{Source: cfg.Source.Name()})
	return m, nil
}

// Overloaded reports whether the last sample found the machine overloaded,
// and why. It implements queue.LoadMonitor.
func (m *Monitor) Overloaded() (bool, string) {
	s := m.snap.Load()
	return s.Overloaded(), s.Reason
}

// Snapshot returns the last sample.
func (m *Monitor) Snapshot() Snapshot {
	return *m.snap.Load()
}

// Run samples at once and then every Interval until ctx ends; it returns
// nil then. Read faults are logged and clear the overload until a sample
// succeeds again.
func (m *Monitor) Run(ctx context.Context) error {
	for {
		_, _ = m.Sample(ctx)
		t := m.cfg.Clock.NewTimer(m.cfg.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

// Sample reads the source now, updates the overload state and returns the
// new snapshot, with the read fault, if any, also in Snapshot.Err. CPU
// usage is averaged since the previous sample; the first sample knows
// only memory.
func (m *Monitor) Sample(ctx context.Context) (Snapshot, error) {
	m.sampling.Lock()
	defer m.sampling.Unlock()
	r, err := m.cfg.Source.Read(ctx)
	now := m.cfg.Clock.Now()
	old := m.Snapshot()
	s := Snapshot{At: now, Source: m.cfg.Source.Name(), Err: err}
	if err != nil {
		m.havePrev = false
		if old.Err == nil {
			m.cfg.Logger.Error("overload: cannot read load; treating as not overloaded", "source", s.Source, "err", err)
		}
	} else {
		m.measure(&s, r, now, old)
		m.prev, m.prevAt, m.havePrev = r, now, true
	}
	s.Reason = s.reason(m.cfg)
	m.snap.Store(&s)
	m.logTransition(old, s)
	return s, err
}

// measure fills s from reading r and applies the thresholds.
func (m *Monitor) measure(s *Snapshot, r Reading, now time.Time, old Snapshot) {
	s.CPUs, s.MemoryUsed, s.MemoryLimit = r.CPUs, r.MemoryUsed, r.MemoryLimit
	if r.MemoryLimit > 0 {
		s.Memory = float64(r.MemoryUsed) / float64(r.MemoryLimit)
		s.MemoryOver = over(old.MemoryOver, s.Memory, m.cfg.Memory, m.cfg.Hysteresis)
	}
	if m.havePrev {
		s.CPU, s.CPUKnown = cpuShare(m.prev, r, now.Sub(m.prevAt))
	}
	if s.CPUKnown {
		s.CPUOver = over(old.CPUOver, s.CPU, m.cfg.CPU, m.cfg.Hysteresis)
	} else {
		s.CPUOver = old.CPUOver // nothing new to judge by
	}
}

// cpuShare is the share of the available CPU time used between two
// readings elapsed apart; false when it cannot be known (no time passed,
// a counter went backwards).
func cpuShare(a, b Reading, elapsed time.Duration) (float64, bool) {
	used := b.CPUUsed - a.CPUUsed
	var avail float64
	if a.CPUTotal > 0 && b.CPUTotal > 0 {
		avail = float64(b.CPUTotal - a.CPUTotal)
	} else {
		avail = float64(elapsed) * b.CPUs
	}
	if used < 0 || avail <= 0 {
		return 0, false
	}
	return min(float64(used)/avail, 1), true
}

// over applies a threshold with hysteresis: a figure turns over at the
// threshold and stays over until it falls below threshold - hysteresis.
func over(was bool, v, threshold, hysteresis float64) bool {
	switch {
	case threshold < 0:
		return false
	case was:
		return v >= threshold-hysteresis
	default:
		return v >= threshold
	}
}

func (m *Monitor) logTransition(old, s Snapshot) {
	switch {
	case s.Overloaded() && !old.Overloaded():
		m.cfg.Logger.Warn("overload: overloaded", "reason", s.Reason, "source", s.Source)
	case !s.Overloaded() && old.Overloaded():
		m.cfg.Logger.Info("overload: load back under thresholds", "cpu", s.CPU, "memory", s.Memory, "source", s.Source)
	}
}
