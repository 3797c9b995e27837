package overload

import (
	"context"
	"testing"
)

// BenchmarkHostRead is the cost of one host sample (gopsutil: /proc/stat
// and /proc/meminfo).
func BenchmarkHostRead(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		if _, err := (Host{}).Read(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCgroupRead is the cost of one cgroup v2 sample (five small
// files; here in a temporary directory with the kernel's layout).
func BenchmarkCgroupRead(b *testing.B) {
	dir := b.TempDir()
	writeTree(b, dir, map[string]string{
		"cpu.stat": cpuStat, "cpu.max": "200000 100000", "memory.current": "600",
		"memory.stat": "anon 400\ninactive_file 100\n", "memory.max": "1000",
	})
	cg := &Cgroup{Dir: dir}
	ctx := context.Background()
	for b.Loop() {
		if _, err := cg.Read(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOverloaded is what every enqueue and lease round pays to ask.
func BenchmarkOverloaded(b *testing.B) {
	m, err := New(Config{Source: Host{}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := m.Sample(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Overloaded()
		}
	})
}
