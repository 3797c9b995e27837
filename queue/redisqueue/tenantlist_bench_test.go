package redisqueue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// BenchmarkTenantsBusiest lists the 100 busiest of 10,000 tenants (one
// pending job each), read in steps of TenantStep tenants per script.
// step-µs is the time of one step seen by the client (the script, the
// round trip and decoding), an upper bound on how long one step holds
// Redis; SLOWLOG gives the script's own time.
func BenchmarkTenantsBusiest(b *testing.B) {
	be := benchServer(b).backend(b, redisqueue.Options{})
	cl := queue.NewClient(be)
	ctx := context.Background()
	const tenants = 10000
	specs := make([]queue.JobSpec, 1000)
	for n := range tenants / len(specs) {
		for i := range specs {
			specs[i] = queue.JobSpec{Queue: "bench", Kind: "k", Tenant: fmt.Sprintf("t%05d", n*len(specs)+i)}
		}
		if _, err := cl.EnqueueBatch(ctx, specs); err != nil {
			b.Fatal(err)
		}
	}
	f := queue.TenantFilter{Order: queue.TenantsBusiest, Limit: 100}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		p, err := cl.Tenants(ctx, f)
		if err != nil || len(p.Tenants) != 100 {
			b.Fatalf("Tenants = %d, %v", len(p.Tenants), err)
		}
	}
	steps := float64(tenants / redisqueue.TenantStep())
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N)/steps, "step-µs")
}
