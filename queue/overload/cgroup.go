package overload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Cgroup reads a cgroup v2 directory. Files it reads:
//
//   - cpu.stat: usage_usec, the CPU time used (required);
//   - cpu.max: "$QUOTA $PERIOD"; "max" or a missing file means no quota;
//   - memory.current: the memory charged to the cgroup (required);
//   - memory.stat: inactive_file, subtracted from memory.current because
//     the kernel reclaims that cache before it runs out of memory (so a
//     process that writes files does not look overloaded);
//   - memory.max: the memory limit; "max" or a missing file means none.
type Cgroup struct {
	// Dir is the cgroup's directory, such as /sys/fs/cgroup. Required.
	Dir string
	// CPUs is the CPU count used when cpu.max sets no quota, and the most
	// a quota counts for; default runtime.NumCPU().
	CPUs float64
	// MemoryTotal is the limit, in bytes, used when memory.max sets none;
	// default the host's memory.
	MemoryTotal uint64
}

// Name returns "cgroup2:" and the directory.
func (c *Cgroup) Name() string { return "cgroup2:" + c.Dir }

// Read reads the cgroup's counters.
func (c *Cgroup) Read(ctx context.Context) (Reading, error) {
	var r Reading
	usage, err := c.statField("cpu.stat", "usage_usec")
	if err != nil {
		return r, err
	}
	r.CPUUsed = time.Duration(usage) * time.Microsecond
	if r.CPUs, err = c.cpus(); err != nil {
		return r, err
	}
	if r.MemoryUsed, err = c.memoryUsed(); err != nil {
		return r, err
	}
	r.MemoryLimit, err = c.memoryLimit(ctx)
	return r, err
}

// cpus is the cgroup's quota in CPUs, at most the CPU count.
func (c *Cgroup) cpus() (float64, error) {
	n := c.CPUs
	if n <= 0 {
		n = float64(runtime.NumCPU())
	}
	raw, err := c.read("cpu.max")
	if errors.Is(err, fs.ErrNotExist) {
		return n, nil
	}
	if err != nil {
		return 0, err
	}
	f := strings.Fields(raw)
	if len(f) == 0 || len(f) > 2 {
		return 0, c.malformed("cpu.max", raw)
	}
	if f[0] == "max" {
		return n, nil
	}
	quota, err1 := strconv.ParseFloat(f[0], 64)
	period := 100000.0 // the kernel's default period, in µs
	var err2 error
	if len(f) == 2 {
		period, err2 = strconv.ParseFloat(f[1], 64)
	}
	if err1 != nil || err2 != nil || quota <= 0 || period <= 0 {
		return 0, c.malformed("cpu.max", raw)
	}
	return min(quota/period, n), nil
}

func (c *Cgroup) memoryUsed() (uint64, error) {
	raw, err := c.read("memory.current")
	if err != nil {
		return 0, err
	}
	cur, err := strconv.ParseUint(raw, 10, 64)
	if err != nil {
		return 0, c.malformed("memory.current", raw)
	}
	inactive, err := c.statField("memory.stat", "inactive_file")
	if errors.Is(err, fs.ErrNotExist) {
		return cur, nil
	}
	if err != nil {
		return 0, err
	}
	if inactive > cur {
		return 0, nil
	}
	return cur - inactive, nil
}

func (c *Cgroup) memoryLimit(ctx context.Context) (uint64, error) {
	raw, err := c.read("memory.max")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	if err == nil && raw != "max" {
		v, perr := strconv.ParseUint(raw, 10, 64)
		if perr != nil || v == 0 {
			return 0, c.malformed("memory.max", raw)
		}
		return v, nil
	}
	if c.MemoryTotal > 0 {
		return c.MemoryTotal, nil
	}
	return hostMemoryTotal(ctx)
}

// statField returns one field of a "key value" file such as cpu.stat.
func (c *Cgroup) statField(file, key string) (uint64, error) {
	raw, err := c.read(file)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(raw) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && k == key {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return 0, c.malformed(file, strings.TrimSpace(line))
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("overload: %s has no %s: %w", filepath.Join(c.Dir, file), key, fs.ErrNotExist)
}

func (c *Cgroup) read(file string) (string, error) {
	b, err := os.ReadFile(filepath.Join(c.Dir, file))
	if err != nil {
		return "", fmt.Errorf("overload: reading cgroup: %w", err)
	}
	return string(bytes.TrimSpace(b)), nil
}

func (c *Cgroup) malformed(file, raw string) error {
	return fmt.Errorf("overload: %s: unexpected content %q", filepath.Join(c.Dir, file), raw)
}

// FindCgroup returns the current process's cgroup v2, or nil when the
// process has none that can be read (cgroup v1, or not Linux); then the
// host's figures are what there is.
func FindCgroup() *Cgroup {
	return findCgroup("/proc/self/cgroup", "/sys/fs/cgroup")
}

// findCgroup looks for the v2 entry ("0::/path") of procFile under the
// cgroup2 mount, and then at the mount itself: inside a container with its
// own cgroup namespace the path reads "/" and the mount is the cgroup.
func findCgroup(procFile, mount string) *Cgroup {
	var dirs []string
	if b, err := os.ReadFile(procFile); err == nil {
		for line := range strings.Lines(string(b)) {
			if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
				dirs = append(dirs, filepath.Join(mount, p))
			}
		}
	}
	dirs = append(dirs, mount)
	for _, d := range dirs {
		c := &Cgroup{Dir: d}
		// memory.current must exist too: on hosts with the v1 hierarchy
		// the v2 mount has cpu.stat but no controllers.
		if _, err := c.statField("cpu.stat", "usage_usec"); err != nil {
			continue
		}
		if _, err := c.memoryUsed(); err != nil {
			continue
		}
		return c
	}
	return nil
}
