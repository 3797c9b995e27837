package overload

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeTree creates files (name → content) under dir.
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const cpuStat = "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n"

func TestCgroupRead(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		files map[string]string
		want  Reading
	}{
		{"quota and limit", map[string]string{
			"cpu.stat": cpuStat, "cpu.max": "200000 100000\n",
			"memory.current": "600\n", "memory.stat": "anon 400\ninactive_file 100\nactive_file 50\n", "memory.max": "1000\n",
		}, Reading{CPUUsed: 2500 * time.Millisecond, CPUs: 2, MemoryUsed: 500, MemoryLimit: 1000}},
		{"fractional quota", map[string]string{
			"cpu.stat": cpuStat, "cpu.max": "50000 100000", "memory.current": "600", "memory.max": "1000",
		}, Reading{CPUUsed: 2500 * time.Millisecond, CPUs: 0.5, MemoryUsed: 600, MemoryLimit: 1000}},
		{"quota above the CPU count", map[string]string{
			"cpu.stat": cpuStat, "cpu.max": "800000 100000", "memory.current": "600", "memory.max": "1000",
		}, Reading{CPUUsed: 2500 * time.Millisecond, CPUs: 4, MemoryUsed: 600, MemoryLimit: 1000}},
		{"no quota, no limit", map[string]string{
			"cpu.stat": cpuStat, "cpu.max": "max 100000", "memory.current": "600", "memory.max": "max",
		}, Reading{CPUUsed: 2500 * time.Millisecond, CPUs: 4, MemoryUsed: 600, MemoryLimit: 1 << 20}},
		{"root cgroup without max files", map[string]string{
			"cpu.stat": cpuStat, "memory.current": "600",
		}, Reading{CPUUsed: 2500 * time.Millisecond, CPUs: 4, MemoryUsed: 600, MemoryLimit: 1 << 20}},
		{"cache above current", map[string]string{
			"cpu.stat": cpuStat, "memory.current": "600", "memory.stat": "inactive_file 700", "memory.max": "1000",
		}, Reading{CPUUsed: 2500 * time.Millisecond, CPUs: 4, MemoryUsed: 0, MemoryLimit: 1000}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeTree(t, dir, c.files)
			cg := &Cgroup{Dir: dir, CPUs: 4, MemoryTotal: 1 << 20}
			got, err := cg.Read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestCgroupReadErrors(t *testing.T) {
	t.Parallel()
	good := map[string]string{"cpu.stat": cpuStat, "memory.current": "600", "memory.max": "1000", "cpu.max": "max 100000"}
	cases := []struct {
		name    string
		edit    map[string]string // replaces files; "" deletes
		wantErr string
	}{
		{"no cpu.stat", map[string]string{"cpu.stat": ""}, "cpu.stat"},
		{"no usage_usec", map[string]string{"cpu.stat": "user_usec 1\n"}, "has no usage_usec"},
		{"bad usage_usec", map[string]string{"cpu.stat": "usage_usec x\n"}, "cpu.stat: unexpected content"},
		{"bad cpu.max", map[string]string{"cpu.max": "lots"}, "cpu.max: unexpected content"},
		{"zero period", map[string]string{"cpu.max": "100 0"}, "cpu.max: unexpected content"},
		{"no memory.current", map[string]string{"memory.current": ""}, "memory.current"},
		{"bad memory.current", map[string]string{"memory.current": "-1"}, "memory.current: unexpected content"},
		{"bad memory.max", map[string]string{"memory.max": "0"}, "memory.max: unexpected content"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			files := map[string]string{}
			for k, v := range good {
				files[k] = v
			}
			for k, v := range c.edit {
				if v == "" {
					delete(files, k)
				} else {
					files[k] = v
				}
			}
			writeTree(t, dir, files)
			_, err := (&Cgroup{Dir: dir, CPUs: 4, MemoryTotal: 1 << 20}).Read(context.Background())
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.HasPrefix(err.Error(), "overload: ") {
				t.Errorf("got %v, want an error mentioning %q", err, c.wantErr)
			}
		})
	}
}

func TestFindCgroup(t *testing.T) {
	t.Parallel()
	full := map[string]string{"cpu.stat": cpuStat, "memory.current": "10"}
	cases := []struct {
		name string
		proc string // content of the proc file; "-" for none
		tree map[string]map[string]string
		want string // directory under the mount; "-" for none
	}{
		{"own cgroup", "0::/system.slice/app.service\n", map[string]map[string]string{
			"": full, "system.slice/app.service": full,
		}, "system.slice/app.service"},
		{"namespaced: the mount is the cgroup", "0::/\n", map[string]map[string]string{"": full}, ""},
		{"path not visible: the mount", "0::/elsewhere\n", map[string]map[string]string{"": full}, ""},
		{"hybrid host: v1 lines and a v2 mount without controllers", "4:memory:/x\n1:cpu:/\n0::/\n",
			map[string]map[string]string{"": {"cpu.stat": cpuStat}}, "-"},
		{"no proc file", "-", map[string]map[string]string{"": full}, ""},
		{"nothing mounted", "0::/\n", nil, "-"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			mount := filepath.Join(root, "cgroup")
			if err := os.MkdirAll(mount, 0o755); err != nil {
				t.Fatal(err)
			}
			for sub, files := range c.tree {
				writeTree(t, filepath.Join(mount, sub), files)
			}
			proc := filepath.Join(root, "proc-cgroup")
			if c.proc != "-" {
				writeTree(t, root, map[string]string{"proc-cgroup": c.proc})
			}
			got := findCgroup(proc, mount)
			switch {
			case c.want == "-" && got != nil:
				t.Errorf("got %s, want none", got.Dir)
			case c.want != "-" && (got == nil || got.Dir != filepath.Join(mount, c.want)):
				t.Errorf("got %v, want %s", got, filepath.Join(mount, c.want))
			}
		})
	}
}

// TestHostRead reads this machine: the figures must be plausible and CPU
// time must not go backwards.
func TestHostRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, err := Host{}.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Host{}.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a.CPUs < 1 || a.MemoryLimit == 0 || a.MemoryUsed > a.MemoryLimit || a.CPUTotal <= 0 || a.CPUUsed > a.CPUTotal {
		t.Errorf("implausible host reading %+v", a)
	}
	if b.CPUUsed < a.CPUUsed || b.CPUTotal < a.CPUTotal {
		t.Errorf("CPU time went backwards: %+v then %+v", a, b)
	}
}

func TestDefaultSourceReads(t *testing.T) {
	t.Parallel()
	src := DefaultSource()
	r, err := src.Read(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", src.Name(), err)
	}
	if r.CPUs <= 0 || r.MemoryLimit == 0 {
		t.Errorf("%s: implausible reading %+v", src.Name(), r)
	}
}
