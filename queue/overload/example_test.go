package overload_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/queue/overload"
)

// container is a Source with fixed figures: 1.5 of its 2 CPUs busy each
// second, 900 MB of 1 GB used.
type container struct{ calls int }

func (c *container) Name() string { return "container" }

func (c *container) Read(context.Context) (overload.Reading, error) {
	c.calls++
	return overload.Reading{
		CPUUsed:     time.Duration(c.calls) * 1500 * time.Millisecond,
		CPUTotal:    time.Duration(c.calls) * 2 * time.Second,
		CPUs:        2,
		MemoryUsed:  900 << 20,
		MemoryLimit: 1000 << 20,
	}, nil
}

func Example() {
	m, err := overload.New(overload.Config{CPU: 0.7, Memory: 0.95, Source: &container{}})
	if err != nil {
		panic(err)
	}
	// In a program: go m.Run(ctx), and give m to queue.WorkerConfig.Monitor
	// and queue.Admission.Monitor. Here two samples are taken by hand.
	ctx := context.Background()
	_, _ = m.Sample(ctx)
	s, _ := m.Sample(ctx)
	fmt.Printf("cpu %.0f%%, memory %.0f%%\n", s.CPU*100, s.Memory*100)
	fmt.Println(m.Overloaded())
	// Output:
	// cpu 75%, memory 90%
	// true cpu 75% (threshold 70%)
}
