package bench

// Cost per job at ordinary rates: jobs enqueued at a steady 1,000 or 5,000
// per second (open loop) into an idle worker at concurrency 100, for
// redisqueue and for asynq with a 10 ms TaskCheckInterval, rounds
// alternating in one run:
//
//	cd bench && go test -c -o /tmp/rqbench.test . &&
//	  /tmp/rqbench.test -test.run '^$' -test.bench 'QueueRedisPaced' -test.benchtime 1x
//
// Per job, each round measures from just before the first enqueue until
// every job is recorded done:
//
//   - redis-cpu-µs: the Redis server's CPU time (INFO cpu, used_cpu_sys +
//     used_cpu_user), so give the benchmark a Redis nobody else uses;
//   - scripts: EVAL, EVALSHA and FCALL calls (INFO commandstats), and
//     script-µs their command time;
//   - calls: every command Redis counted, including those run inside
//     scripts;
//   - client-cpu-µs: this process's CPU time (getrusage), the enqueuing
//     client and the worker together;
//   - p50-ms, p99-ms: enqueue-to-start latency.
//
// With -test.v the log also shows, per round, the commands Redis counted
// per job and, when Redis runs on this machine, its reads, writes and
// sleeps (voluntary context switches) per job.
//
// Each figure is the median over the rounds (SLUICE_BENCH_ROUNDS, default
// 5); the log shows every round. Jobs per round: three seconds' worth.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// rqCost is one round's figures, per job.
type rqCost struct {
	redisCPU, scripts, scriptUS, calls, clientCPU, p50, p99 float64
}

// rqServerSnap is what INFO says at one moment.
type rqServerSnap struct {
	cpu               float64 // seconds
	scripts, calls    float64
	scriptUS, totalUS float64
	byCmd             map[string][2]float64 // calls, usec
	// syscr, syscw: the server's read and write system calls, when it
	// runs on this machine (/proc/<pid>/io); each is about one wake-up.
	syscr, syscw float64
	// sleeps: the server's voluntary context switches (/proc/<pid>/status),
	// each a wait for work that ended.
	sleeps float64
}

func rqSnap(b *testing.B, c *redis.Client) rqServerSnap {
	info, err := c.Info(context.Background(), "server", "cpu", "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	s := rqServerSnap{byCmd: map[string][2]float64{}}
	for _, line := range strings.Split(info, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch {
		case k == "process_id":
			s.syscr, s.syscw = rqProcIO(v)
			s.sleeps = rqProcSleeps(v)
		case k == "used_cpu_sys" || k == "used_cpu_user":
			f, _ := strconv.ParseFloat(v, 64)
			s.cpu += f
		case strings.HasPrefix(k, "cmdstat_"):
			calls, usec := rqCmdStat(v)
			s.calls += calls
			s.totalUS += usec
			s.byCmd[strings.TrimPrefix(k, "cmdstat_")] = [2]float64{calls, usec}
			switch strings.TrimPrefix(k, "cmdstat_") {
			case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
				s.scripts += calls
				s.scriptUS += usec
			}
		}
	}
	return s
}

// rqProcIO reads the read and write system calls of process pid, or
// zeros when it cannot.
func rqProcIO(pid string) (r, w float64) {
	b, _ := os.ReadFile("/proc/" + pid + "/io")
	m := rqPairs(string(b), "\n", ":")
	return m["syscr"], m["syscw"]
}

// rqProcSleeps reads the voluntary context switches of process pid, or
// zero when it cannot.
func rqProcSleeps(pid string) float64 {
	b, _ := os.ReadFile("/proc/" + pid + "/status")
	return rqPairs(string(b), "\n", ":")["voluntary_ctxt_switches"]
}

// rqCmdStat reads "calls=N,usec=N,..." of one commandstats line.
func rqCmdStat(v string) (calls, usec float64) {
	m := rqPairs(v, ",", "=")
	return m["calls"], m["usec"]
}

// rqPairs reads "name<kv>number" fields separated by sep; a field whose
// value is no number reads as zero.
func rqPairs(s, sep, kv string) map[string]float64 {
	out := map[string]float64{}
	for _, f := range strings.Split(s, sep) {
		k, v, _ := strings.Cut(f, kv)
		out[k], _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
	}
	return out
}

// rqProcessCPU is this process's CPU time, user and system.
func rqProcessCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkQueueRedisPaced(b *testing.B) {
	systems := []rqSystem{
		rqSystems[0],
		rqCooldown,
		rqLinger,
		{"asynq-check10ms", func(b *testing.B) rqTarget { return rqOpenAsynq(b, 10*time.Millisecond) }},
	}
	// SLUICE_BENCH_PACED_ONLY=redisqueue runs one system alone, for
	// comparing two builds of it.
	if only := os.Getenv("SLUICE_BENCH_PACED_ONLY"); only != "" {
		systems = slices.DeleteFunc(systems, func(s rqSystem) bool { return s.name != only })
	}
	rounds := 5
	if n, err := strconv.Atoi(os.Getenv("SLUICE_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	for _, rate := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			got := make([][]rqCost, len(systems))
			for r := 0; r < rounds; r++ {
				for i, sys := range systems {
					c := rqPacedRound(b, sys.open, rate, 3*rate)
					b.Logf("round %d %-16s %+v", r, sys.name, c)
					got[i] = append(got[i], c)
				}
			}
			for i, sys := range systems {
				med := func(f func(rqCost) float64) float64 {
					v := make([]float64, len(got[i]))
					for k, c := range got[i] {
						v[k] = f(c)
					}
					slices.Sort(v)
					return v[len(v)/2]
				}
				n := sys.name
				b.ReportMetric(med(func(c rqCost) float64 { return c.redisCPU }), n+"-redis-cpu-µs/job")
				b.ReportMetric(med(func(c rqCost) float64 { return c.scripts }), n+"-scripts/job")
				b.ReportMetric(med(func(c rqCost) float64 { return c.scriptUS }), n+"-script-µs/job")
				b.ReportMetric(med(func(c rqCost) float64 { return c.calls }), n+"-calls/job")
				b.ReportMetric(med(func(c rqCost) float64 { return c.clientCPU }), n+"-client-cpu-µs/job")
				b.ReportMetric(med(func(c rqCost) float64 { return c.p50 }), n+"-p50-ms")
				b.ReportMetric(med(func(c rqCost) float64 { return c.p99 }), n+"-p99-ms")
			}
		})
	}
}

// rqPacedRound opens a system, starts its worker at concurrency 100, lets
// it go idle, then enqueues n jobs at rate per second from 8 goroutines
// and measures until all are done.
func rqPacedRound(b *testing.B, open func(*testing.B) rqTarget, rate, n int) rqCost {
	q := open(b)
	c, _ := rqRedis(b) // the same database, flushed again: nothing stored yet
	var mu sync.Mutex
	lat := make([]time.Duration, 0, n)
	var ran atomic.Int64
	all := make(chan struct{})
	stop := q.run(100, func(p []byte) {
		d := rqSince(p)
		mu.Lock()
		lat = append(lat, d)
		mu.Unlock()
		if ran.Add(1) == int64(n) {
			close(all)
		}
	})
	defer stop()
	time.Sleep(300 * time.Millisecond) // let the worker start and go idle
	ctx := context.Background()
	jobs := make(chan struct{}, n)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for range jobs {
				if err := q.enqueue(ctx, rqStamp()); err != nil {
					b.Error(err)
				}
			}
		})
	}
	s0, cpu0 := rqSnap(b, c), rqProcessCPU()
	start := time.Now()
	for i := 0; i < n; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))))
		jobs <- struct{}{}
	}
	close(jobs)
	wg.Wait()
	<-all
	// The last handlers' completes land within a few milliseconds; polling
	// for them here would itself cost scripts, so wait a little, measure,
	// and only then check.
	time.Sleep(20 * time.Millisecond)
	cpu1, s1 := rqProcessCPU(), rqSnap(b, c)
	rqWaitFinished(b, q)
	per := float64(n)
	b.Log(rqCmdDiff(s0, s1, per))
	slices.Sort(lat)
	return rqCost{
		redisCPU:  (s1.cpu - s0.cpu) * 1e6 / per,
		scripts:   (s1.scripts - s0.scripts) / per,
		scriptUS:  (s1.scriptUS - s0.scriptUS) / per,
		calls:     (s1.calls - s0.calls - 2) / per, // less the two INFO calls
		clientCPU: float64((cpu1 - cpu0).Microseconds()) / per,
		p50:       float64(lat[len(lat)/2].Microseconds()) / 1000,
		p99:       float64(lat[len(lat)*99/100].Microseconds()) / 1000,
	}
}

// rqCmdDiff lists, per job, the commands Redis counted between two
// snapshots, most time first: "name calls/usec".
func rqCmdDiff(s0, s1 rqServerSnap, per float64) string {
	type row struct {
		name        string
		calls, usec float64
	}
	var rows []row
	for k, v := range s1.byCmd {
		d := row{k, (v[0] - s0.byCmd[k][0]) / per, (v[1] - s0.byCmd[k][1]) / per}
		if d.calls > 0.005 {
			rows = append(rows, d)
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return int(b.usec*1000 - a.usec*1000) })
	var sb strings.Builder
	fmt.Fprintf(&sb, "server reads %.2f writes %.2f sleeps %.2f per job;",
		(s1.syscr-s0.syscr)/per, (s1.syscw-s0.syscw)/per, (s1.sleeps-s0.sleeps)/per)
	for _, r := range rows {
		fmt.Fprintf(&sb, " %s %.2f/%.1fµs", r.name, r.calls, r.usec)
	}
	return sb.String()
}
