package overload

import (
	"context"
	"time"
)

// Reading is one reading of a Source's counters. CPU figures are
// cumulative, so usage is the difference between two readings.
type Reading struct {
	// CPUUsed is the CPU time consumed so far, summed over all CPUs.
	CPUUsed time.Duration
	// CPUTotal is the CPU time that was available so far, summed over all
	// CPUs, when the source counts it (the host does: busy plus idle). Zero
	// means the monitor derives it from wall time elapsed × CPUs.
	CPUTotal time.Duration
	// CPUs is how many CPUs' worth of time the source may use: a cgroup's
	// cpu.max quota over its period, or the number of CPUs.
	CPUs float64
	// MemoryUsed is the memory in use, in bytes, without reclaimable page
	// cache.
	MemoryUsed uint64
	// MemoryLimit is the memory the source may use, in bytes: a cgroup's
	// memory.max, or the host's memory.
	MemoryLimit uint64
}

// Source reads CPU and memory counters. Implementations must be safe for
// concurrent use.
type Source interface {
	// Read returns the counters as they are now.
	Read(ctx context.Context) (Reading, error)
	// Name says what is read, such as "cgroup2:/sys/fs/cgroup" or "host".
	Name() string
}
