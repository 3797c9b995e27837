package overload

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/mem"
)

// Host reads the whole machine's CPU and memory (through gopsutil: /proc
// on Linux).
type Host struct{}

// Name returns "host".
func (Host) Name() string { return "host" }

// Read returns the host's counters. CPU time counts busy time as used
// (everything but idle and I/O wait; time stolen by a hypervisor is
// busy, since this machine could not use it); memory used is total
// less available.
func (Host) Read(ctx context.Context) (Reading, error) {
	ts, err := cpu.TimesWithContext(ctx, false)
	if err != nil {
		return Reading{}, fmt.Errorf("overload: reading host CPU: %w", err)
	}
	if len(ts) == 0 {
		return Reading{}, fmt.Errorf("overload: reading host CPU: no figures")
	}
	t := ts[0]
	// Guest time is already part of user time on Linux: left out so it
	// is not counted twice.
	total := t.User + t.System + t.Idle + t.Nice + t.Iowait + t.Irq + t.Softirq + t.Steal
	busy := total - t.Idle - t.Iowait
	vm, err := mem.VirtualMemoryWithContext(ctx)
	if err != nil {
		return Reading{}, fmt.Errorf("overload: reading host memory: %w", err)
	}
	used := vm.Total - min(vm.Available, vm.Total)
	return Reading{
		CPUUsed:     seconds(busy),
		CPUTotal:    seconds(total),
		CPUs:        float64(runtime.NumCPU()),
		MemoryUsed:  used,
		MemoryLimit: vm.Total,
	}, nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func hostMemoryTotal(ctx context.Context) (uint64, error) {
	vm, err := mem.VirtualMemoryWithContext(ctx)
	if err != nil {
		return 0, fmt.Errorf("overload: reading host memory: %w", err)
	}
	return vm.Total, nil
}

// DefaultSource returns the process's cgroup v2 when it has one
// (FindCgroup), else Host.
func DefaultSource() Source {
	if c := FindCgroup(); c != nil {
		return c
	}
	return Host{}
}
