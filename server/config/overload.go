package config

import (
	"slices"

	"github.com/sluicehq/sluice/queue/overload"
)

// Overload configures the overload monitor (package queue/overload): while
// CPU or memory use is at or above its threshold, enqueues are refused
// with 503 and Retry-After, and lease calls hand out no job, so workers
// stop taking work before the machine runs out. Off unless Enabled.
type Overload struct {
	// Enabled turns the monitor on; default false.
	Enabled bool `yaml:"enabled"`
	// CPU is the share of the available CPU (0 to 1) at which the server
	// is overloaded; default 0.80; -1 turns the CPU check off.
	CPU float64 `yaml:"cpu"`
	// Memory is the share of the memory limit (0 to 1) at which the
	// server is overloaded; default 0.80; -1 turns the memory check off.
	Memory float64 `yaml:"memory"`
	// Hysteresis is how far below its threshold a figure must fall for
	// the overload to clear; default 0.05; -1 means none.
	Hysteresis float64 `yaml:"hysteresis"`
	// Interval is the time between samples; default 1s.
	Interval Duration `yaml:"interval"`
	// Source is what is read: "auto" (default: the process's cgroup v2,
	// else the host), "cgroup" (a cgroup v2 directory) or "host".
	Source string `yaml:"source"`
	// CgroupDir is the cgroup v2 directory Source "cgroup" reads; default
	// the process's own. Set it to watch another one, such as a
	// container's mounted from the host.
	CgroupDir string `yaml:"cgroup_dir"`
	// CPUs is the CPU count used when the cgroup sets no quota; default
	// the machine's.
	CPUs float64 `yaml:"cpus"`
	// MemoryTotal is the memory limit, in bytes, used when the cgroup sets
	// none; default the host's memory.
	MemoryTotal uint64 `yaml:"memory_total"`
	// PauseLeasing, when true (the default is true: write false to keep
	// leasing), makes lease calls hand out no job while overloaded.
	PauseLeasing *bool `yaml:"pause_leasing"`
}

// Sources of Overload.Source.
var OverloadSources = []string{"auto", "cgroup", "host"}

// Pauses reports whether leasing stops while overloaded.
func (o Overload) Pauses() bool { return o.PauseLeasing == nil || *o.PauseLeasing }

// Library returns o as an overload.Config, its source chosen; call it on
// a validated Config.
func (o Overload) Library() overload.Config {
	c := overload.Config{CPU: o.CPU, Memory: o.Memory, Hysteresis: o.Hysteresis, Interval: o.Interval.D()}
	switch o.Source {
	case "host":
		c.Source = overload.Host{}
	case "cgroup":
		cg := &overload.Cgroup{Dir: o.CgroupDir}
		if cg.Dir == "" {
			if own := overload.FindCgroup(); own != nil {
				cg.Dir = own.Dir
			}
		}
		cg.CPUs, cg.MemoryTotal = o.CPUs, o.MemoryTotal
		c.Source = cg
	default:
		if cg := overload.FindCgroup(); cg != nil {
			cg.CPUs, cg.MemoryTotal = o.CPUs, o.MemoryTotal
			c.Source = cg
		} else {
			c.Source = overload.Host{}
		}
	}
	return c
}

func (v *validator) overload(o Overload) {
	base := []any{"queues", "overload"}
	for _, f := range []struct {
		name string
		v    float64
	}{{"cpu", o.CPU}, {"memory", o.Memory}, {"hysteresis", o.Hysteresis}} {
		if (f.v < 0 && f.v != -1) || f.v > 1 {
			v.add(p(base, f.name), "must be a share from 0 (default) to 1, or -1 (off), got %v", f.v)
		}
	}
	if o.CPU < 0 && o.Memory < 0 && o.Enabled {
		v.add(p(base, "cpu"), "cpu and memory are both off: the monitor would never report overload")
	}
	v.nonNegativeDuration(p(base, "interval"), o.Interval)
	if o.Source != "" && !slices.Contains(OverloadSources, o.Source) {
		v.add(p(base, "source"), `must be "auto", "cgroup" or "host", got %q`, o.Source)
	}
	if o.CgroupDir != "" && o.Source != "cgroup" {
		v.add(p(base, "cgroup_dir"), `only applies to source "cgroup"`)
	}
	if o.CPUs < 0 {
		v.add(p(base, "cpus"), "must not be negative, got %v", o.CPUs)
	}
}
