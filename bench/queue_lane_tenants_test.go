package bench

import (
	"context"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/amqpqueue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// BenchmarkQueueLaneTenants is the lane with tenant limits against
// redisqueue with the same tenants, in paired rounds in one process (each
// round runs every system back to back, so the shared machine's load hits
// them alike, in alternating order):
//
//	cd bench && SLUICE_BENCH_REDIS_URL=redis://127.0.0.1:6379/13 \
//	  go test -run '^$' -bench QueueLaneTenants -benchtime 20000x -timeout 30m .
//
// Each run fills a queue with b.N no-op jobs of 50 tenants (job i is
// tenant i mod 50), every tenant limited to 5 at once, and drains it with
// one queue.Worker at concurrency 300 (the 250 slots of the tenants bind);
// jobs/s from the worker's start until every job is recorded done, and the
// CPU each job cost this process, redis-server and the broker. Systems:
// the lane with a redisqueue Scheduler (Options.Scheduler), redisqueue
// alone, and for reference the lane with the same jobs without tenants.
// SLUICE_BENCH_ROUNDS sets the rounds (default 3).
func BenchmarkQueueLaneTenants(b *testing.B) {
	const tenants, limit, conc = 50, 5, 300
	if b.N < tenants*limit {
		return // the framework's first probe: too few jobs to fill the slots
	}
	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("SLUICE_BENCH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	systems := []struct {
		name    string
		tenants bool
		open    func(b *testing.B) backend.Backend
	}{
		{"amqpqueue+scheduler", true, func(b *testing.B) backend.Backend { return openTenantLane(b, conc, true) }},
		{"redisqueue", true, openTenantRedis},
		{"amqpqueue, no tenants", false, func(b *testing.B) backend.Backend { return openTenantLane(b, conc, false) }},
	}
	results := make([][]tenantRun, len(systems))
	for r := 0; r < rounds; r++ {
		order := []int{0, 1, 2}
		if r%2 == 1 {
			order = []int{2, 1, 0} // whoever went first goes last: the first run of a round runs slower
		}
		for _, i := range order {
			sys := systems[i]
			be := sys.open(b)
			c := queue.NewClient(be)
			if sys.tenants {
				if err := c.SetTenantDefaults(context.Background(), queue.TenantConfig{Limit: limit}); err != nil {
					b.Fatal(err)
				}
			}
			run := drainTenants(b, c, be, b.N, tenants, sys.tenants, conc)
			results[i] = append(results[i], run)
			b.Logf("round %d %-22s %8.0f jobs/s  client %5.1f  redis %5.1f  broker %5.1f µs/job  (load %s)",
				r+1, sys.name, run.rate, run.client, run.redis, run.broker, loadAvg())
		}
	}
	for i, sys := range systems {
		b.Logf("median %-22s %8.0f jobs/s  client %5.1f  redis %5.1f  broker %5.1f µs/job", sys.name,
			runMedian(results[i], func(r tenantRun) float64 { return r.rate }),
			runMedian(results[i], func(r tenantRun) float64 { return r.client }),
			runMedian(results[i], func(r tenantRun) float64 { return r.redis }),
			runMedian(results[i], func(r tenantRun) float64 { return r.broker }))
	}
	ratios := make([]tenantRun, rounds)
	for r := range ratios {
		ratios[r].rate = results[0][r].rate / results[1][r].rate
		b.Logf("round %d lane+scheduler ÷ redisqueue: %.2f×", r+1, ratios[r].rate)
	}
	ratio := runMedian(ratios, func(r tenantRun) float64 { return r.rate })
	b.Logf("lane+scheduler ÷ redisqueue, median of the rounds' ratios: %.2f×", ratio)
	b.ReportMetric(ratio, "lane/redisqueue")
	b.ReportMetric(runMedian(results[0], func(r tenantRun) float64 { return r.rate }), "lane-jobs/s")
	b.ReportMetric(runMedian(results[1], func(r tenantRun) float64 { return r.rate }), "redisqueue-jobs/s")
}

// tenantRun is one drain's figures: jobs/s and CPU µs per job.
type tenantRun struct{ rate, client, redis, broker float64 }

func runMedian(rs []tenantRun, f func(tenantRun) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	if len(v)%2 == 0 {
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return v[len(v)/2]
}

func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil || len(raw) < 14 {
		return "?"
	}
	return string(raw[:14])
}

// drainTenants fills n jobs over the tenants and runs a worker until all
// are done.
func drainTenants(b *testing.B, c *queue.Client, be backend.Backend, n, tenants int, withTenant bool, conc int) tenantRun {
	ctx := context.Background()
	if err := fillTenants(ctx, c, n, tenants, withTenant); err != nil {
		b.Fatal(err)
	}
	redisPID, brokerPID := findProc("redis-server"), findProc("beam.smp")
	self, redis, broker := selfCPU(), procCPU(redisPID), procCPU(brokerPID)
	var done atomic.Int64
	all := make(chan struct{})
	start := time.Now()
	stop := laneWorkerOn(be, conc, func() {
		if done.Add(1) == int64(n) {
			close(all)
		}
	})
	<-all
	waitTenantsDone(b, c)
	elapsed := time.Since(start)
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	run := tenantRun{rate: float64(n) / elapsed.Seconds(), client: per(selfCPU() - self),
		redis: per(procCPU(redisPID) - redis), broker: per(procCPU(brokerPID) - broker)}
	stop()
	return run
}

func laneWorkerOn(be backend.Backend, conc int, handle func()) func() {
	return laneWorker(be, conc, func([]byte) { handle() })
}

// fillTenants enqueues n no-op jobs, job i of tenant i mod tenants.
func fillTenants(ctx context.Context, c *queue.Client, n, tenants int, withTenant bool) error {
	return laneFillSpecs(ctx, c, n, func(i int) queue.JobSpec {
		s := queue.JobSpec{Queue: laneQueueName, Kind: "noop"}
		if withTenant {
			s.Tenant = "t" + strconv.Itoa(i%tenants)
		}
		return s
	})
}

// waitTenantsDone waits until no job is unfinished, waiting ones
// included.
func waitTenantsDone(b *testing.B, c *queue.Client) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, err := c.Stats(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		var n int64
		for _, s := range st {
			for _, state := range []queue.State{queue.StatePending, queue.StateWaiting, queue.StateActive, queue.StateRetrying, queue.StateScheduled} {
				n += s.Counts[state]
			}
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d jobs unfinished two minutes after the last handler started", n)
		}
		time.Sleep(time.Millisecond)
	}
}

// openTenantRedis opens a redisqueue under a fresh prefix.
func openTenantRedis(b *testing.B) backend.Backend {
	prefix := "sluicebench-" + laneRandom() + ":"
	c, _ := laneRedis(b, prefix+"*")
	be, err := redisqueue.New(c, redisqueue.Options{Prefix: keyspace.Prefix(prefix), Logger: laneQuiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = be.Close() })
	return be
}

// openTenantLane opens the lane with prefetch conc, with a redisqueue
// Scheduler when sched is set.
func openTenantLane(b *testing.B, conc int, sched bool) backend.Backend {
	opts := amqpqueue.Options{Prefetch: conc}
	if sched {
		opts.Scheduler = openTenantRedis(b)
	}
	url := laneEnv("SLUICE_BENCH_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
	prefix := "sluicebench-" + laneRandom() + "."
	opts.Prefix, opts.Logger = prefix, laneQuiet
	be, err := amqpqueue.New(url, opts)
	if err != nil {
		b.Skipf("no RabbitMQ at %s: %v", url, err)
	}
	b.Cleanup(func() {
		_ = be.Close()
		deleteAMQPQueues(b, url, prefix+laneQueueName, prefix+laneQueueName+".dead")
	})
	return be
}
