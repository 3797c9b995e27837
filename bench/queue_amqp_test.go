package bench

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/amqpqueue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// Job-queue lane benchmarks: the RabbitMQ lane (queue/amqpqueue) against
// redisqueue and hibiken/asynq, with no-op jobs, side by side in one run:
//
//	cd bench && go test -run '^$' -bench 'QueueLane' -benchtime 20000x -count 5 -timeout 60m .
//
//   - Enqueue: jobs/s enqueued one by one from 64 goroutines; the lane
//     returns only once the broker confirmed each job.
//   - Process: a queue filled with b.N jobs beforehand, drained by one
//     worker process at concurrency (and, for the lane, prefetch) 10, 100
//     and 1000; jobs/s from the worker's start until every job is recorded
//     done (for the lane: completed, its ack handed to the connection).
//   - Latency: jobs enqueued at a steady 1000/s into idle workers;
//     enqueue-to-start p50 and p99, from before the Enqueue call to the
//     handler's start.
//
// RabbitMQ is SLUICE_BENCH_AMQP_URL (default amqp://guest:guest@127.0.0.1:5672/)
// and Redis SLUICE_BENCH_REDIS_URL (default redis://127.0.0.1:6379/14); a
// system that does not answer is skipped. Every run uses fresh queue names
// and keys and deletes them afterwards.

// laneQueue is one system under test, opened for one benchmark.
type laneQueue struct {
	enqueue func(ctx context.Context, payload []byte) error
	// fill enqueues n jobs as fast as the system allows (batches where it
	// has them).
	fill func(ctx context.Context, n int) error
	// run starts a worker at concurrency conc that calls handle with each
	// job's payload, and returns a function stopping it.
	run func(conc int, handle func(payload []byte)) (stop func())
	// unfinished counts jobs not yet recorded done (ready or running).
	unfinished func(ctx context.Context) (int64, error)
}

type laneSystem struct {
	name string
	open func(b *testing.B, conc int) laneQueue
	// server names the server process (its /proc comm), whose CPU time
	// the process benchmark reports per job when it runs on this machine.
	server string
}

var laneSystems = []laneSystem{
	{"amqpqueue", openLaneAMQP, "beam.smp"},
	{"redisqueue", openLaneRedisQueue, "redis-server"},
	{"asynq", openLaneAsynq, "redis-server"},
}

var laneQuiet = slog.New(slog.NewTextHandler(io.Discard, nil))

const laneQueueName = "bench"

func laneEnv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func laneRandom() string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	return hex.EncodeToString(r[:])
}

// laneWorker runs a sluice Worker for the lane and redisqueue.
func laneWorker(be backend.Backend, conc int, handle func([]byte)) (stop func()) {
	w := queue.NewWorker(be, queue.WorkerConfig{Queues: []string{laneQueueName}, Concurrency: conc, Logger: laneQuiet})
	w.Handle("noop", queue.HandlerFunc(func(_ context.Context, j *queue.Job) ([]byte, error) {
		handle(j.Payload)
		return nil, nil
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	return func() { cancel(); <-done }
}

// laneFill enqueues n no-op jobs through a sluice Client, in batches of
// 500 from 4 goroutines.
func laneFill(ctx context.Context, c *queue.Client, n int) error {
	return laneFillSpecs(ctx, c, n, func(int) queue.JobSpec {
		return queue.JobSpec{Queue: laneQueueName, Kind: "noop", Payload: laneStamp()}
	})
}

// laneFillSpecs enqueues the n jobs spec(0..n-1) through a sluice Client,
// in batches of 500 from 4 goroutines.
func laneFillSpecs(ctx context.Context, c *queue.Client, n int, spec func(i int) queue.JobSpec) error {
	const batch = 500
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				from := int(next.Add(batch)) - batch
				if from >= n {
					return
				}
				specs := make([]queue.JobSpec, min(batch, n-from))
				for i := range specs {
					specs[i] = spec(from + i)
				}
				if _, err := c.EnqueueBatch(ctx, specs); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func openLaneAMQP(b *testing.B, conc int) laneQueue {
	return openLaneAMQPWith(b, amqpqueue.Options{Prefetch: conc})
}

func openLaneAMQPWith(b *testing.B, opts amqpqueue.Options) laneQueue {
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
	c := queue.NewClient(be)
	return laneQueue{
		enqueue: func(ctx context.Context, p []byte) error {
			_, err := c.Enqueue(ctx, queue.JobSpec{Queue: laneQueueName, Kind: "noop", Payload: p})
			return err
		},
		fill:       func(ctx context.Context, n int) error { return laneFill(ctx, c, n) },
		run:        func(conc int, h func([]byte)) func() { return laneWorker(be, conc, h) },
		unfinished: func(ctx context.Context) (int64, error) { return laneUnfinished(ctx, c) },
	}
}

// laneUnfinished counts the jobs a sluice backend has not recorded done.
func laneUnfinished(ctx context.Context, c *queue.Client) (int64, error) {
	st, err := c.Stats(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, s := range st {
		n += s.Counts[queue.StatePending] + s.Counts[queue.StateActive] + s.Counts[queue.StateRetrying] + s.Counts[queue.StateScheduled]
	}
	return n, nil
}

func deleteAMQPQueues(b *testing.B, url string, names ...string) {
	conn, err := amqp.Dial(url)
	if err != nil {
		b.Errorf("cleanup: %v", err)
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		b.Errorf("cleanup: %v", err)
		return
	}
	for _, n := range names {
		if _, err := ch.QueueDelete(n, false, false, false); err != nil {
			b.Errorf("cleanup: delete %s: %v", n, err)
		}
	}
}

// laneRedis connects to the benchmark Redis, skipping when it does not
// answer, and deletes the keys matching pattern afterwards.
func laneRedis(b *testing.B, pattern string) (*redis.Client, *redis.Options) {
	url := laneEnv("SLUICE_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
	opts, err := redis.ParseURL(url)
	if err != nil {
		b.Fatalf("redis URL: %v", err)
	}
	c := redis.NewClient(opts)
	if err := c.Ping(context.Background()).Err(); err != nil {
		_ = c.Close()
		b.Skipf("no Redis at %s: %v", url, err)
	}
	b.Cleanup(func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
		_ = c.Close()
	})
	return c, opts
}

func openLaneRedisQueue(b *testing.B, _ int) laneQueue {
	prefix := "sluicebench-" + laneRandom() + ":"
	c, _ := laneRedis(b, prefix+"*")
	be, err := redisqueue.New(c, redisqueue.Options{Prefix: keyspace.Prefix(prefix), Logger: laneQuiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = be.Close() })
	cl := queue.NewClient(be)
	return laneQueue{
		enqueue: func(ctx context.Context, p []byte) error {
			_, err := cl.Enqueue(ctx, queue.JobSpec{Queue: laneQueueName, Kind: "noop", Payload: p})
			return err
		},
		fill:       func(ctx context.Context, n int) error { return laneFill(ctx, cl, n) },
		run:        func(conc int, h func([]byte)) func() { return laneWorker(be, conc, h) },
		unfinished: func(ctx context.Context) (int64, error) { return laneUnfinished(ctx, cl) },
	}
}

func openLaneAsynq(b *testing.B, _ int) laneQueue {
	qname := "sluicebench-" + laneRandom()
	rc, ropts := laneRedis(b, "asynq:{"+qname+"}*")
	opt := asynq.RedisClientOpt{Addr: ropts.Addr, DB: ropts.DB, Password: ropts.Password}
	client := asynq.NewClient(opt)
	b.Cleanup(func() {
		_ = client.Close()
		insp := asynq.NewInspector(opt)
		_ = insp.DeleteQueue(qname, true)
		_ = insp.Close()
	})
	enqueue := func(ctx context.Context, p []byte) error {
		_, err := client.EnqueueContext(ctx, asynq.NewTask("noop", p), asynq.Queue(qname))
		return err
	}
	return laneQueue{
		enqueue: enqueue,
		fill: func(ctx context.Context, n int) error {
			return laneParallel(16, n, func(int) error { return enqueue(ctx, laneStamp()) })
		},
		run: func(conc int, h func([]byte)) func() {
			srv := asynq.NewServer(opt, asynq.Config{
				Concurrency: conc, Queues: map[string]int{qname: 1}, Logger: laneAsynqLog{}, LogLevel: asynq.FatalLevel,
				// Its default (1s) is how long an idle server sleeps
				// before looking again; 10ms keeps its latency
				// comparable with the notified workers of the others.
				TaskCheckInterval: 10 * time.Millisecond,
			})
			mux := asynq.NewServeMux()
			mux.HandleFunc("noop", func(_ context.Context, t *asynq.Task) error { h(t.Payload()); return nil })
			if err := srv.Start(mux); err != nil {
				b.Fatal(err)
			}
			return srv.Shutdown
		},
		unfinished: func(ctx context.Context) (int64, error) {
			pipe := rc.Pipeline()
			p := pipe.LLen(ctx, "asynq:{"+qname+"}:pending")
			a := pipe.LLen(ctx, "asynq:{"+qname+"}:active")
			if _, err := pipe.Exec(ctx); err != nil {
				return 0, err
			}
			return p.Val() + a.Val(), nil
		},
	}
}

type laneAsynqLog struct{}

func (laneAsynqLog) Debug(...any) {}
func (laneAsynqLog) Info(...any)  {}
func (laneAsynqLog) Warn(...any)  {}
func (laneAsynqLog) Error(...any) {}
func (laneAsynqLog) Fatal(...any) {}

// laneStamp is a payload carrying the current time.
func laneStamp() []byte { return binary.LittleEndian.AppendUint64(nil, uint64(time.Now().UnixNano())) }

func laneSince(p []byte) time.Duration {
	return time.Duration(time.Now().UnixNano() - int64(binary.LittleEndian.Uint64(p)))
}

// laneParallel runs op(0..n-1) from g goroutines and returns the first
// error.
func laneParallel(g, n int, op func(i int) error) error {
	var next atomic.Int64
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	for w := 0; w < g; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if err := op(i); err != nil {
					first.CompareAndSwap(nil, &err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if p := first.Load(); p != nil {
		return *p
	}
	return nil
}

func BenchmarkQueueLaneEnqueue(b *testing.B) {
	for _, sys := range laneSystems {
		b.Run(sys.name, func(b *testing.B) {
			q := sys.open(b, 100)
			ctx := context.Background()
			b.ResetTimer()
			start := time.Now()
			if err := laneParallel(64, b.N, func(int) error { return q.enqueue(ctx, laneStamp()) }); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
		})
	}
}

func BenchmarkQueueLaneProcess(b *testing.B) {
	// The lane's priority mode (classic queues) as well.
	classic := laneSystem{"amqpqueue-priorities", func(b *testing.B, conc int) laneQueue {
		return openLaneAMQPWith(b, amqpqueue.Options{Prefetch: conc, Priorities: 10})
	}, "beam.smp"}
	for _, sys := range append(slices.Clone(laneSystems), classic) {
		for _, conc := range []int{10, 100, 1000} {
			b.Run(fmt.Sprintf("%s/c=%d", sys.name, conc), func(b *testing.B) {
				q := sys.open(b, conc)
				if err := q.fill(context.Background(), b.N); err != nil {
					b.Fatal(err)
				}
				var done atomic.Int64
				all := make(chan struct{})
				cpu := startCPU(sys.server)
				b.ResetTimer()
				start := time.Now()
				stop := q.run(conc, func([]byte) {
					if done.Add(1) == int64(b.N) {
						close(all)
					}
				})
				<-all
				laneWaitFinished(b, q)
				elapsed := time.Since(start)
				b.StopTimer()
				cpu.report(b)
				stop()
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
			})
		}
	}
}

// laneWaitFinished waits until the system records every job done.
func laneWaitFinished(b *testing.B, q laneQueue) {
	deadline := time.Now().Add(time.Minute)
	for {
		n, err := q.unfinished(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d jobs unfinished a minute after the last handler started", n)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// cpuMeter measures the CPU time this process and a server process spend
// while jobs are processed, so that the figures can be compared per job
// on a machine whose other load varies. Linux only; the server must run
// here and serve only the benchmark.
type cpuMeter struct {
	pid          int
	self, server time.Duration
}

func startCPU(server string) *cpuMeter {
	m := &cpuMeter{pid: findProc(server)}
	m.self, m.server = selfCPU(), procCPU(m.pid)
	return m
}

func (m *cpuMeter) report(b *testing.B) {
	n := float64(b.N)
	b.ReportMetric(float64((selfCPU()-m.self).Microseconds())/n, "client-cpu-µs/job")
	if m.pid > 0 {
		b.ReportMetric(float64((procCPU(m.pid)-m.server).Microseconds())/n, "server-cpu-µs/job")
	}
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// findProc returns the pid of the process whose comm is name, or 0; with
// SLUICE_BENCH_SERVER_PID_<name> set (dots as underscores), that pid.
func findProc(name string) int {
	if v := os.Getenv("SLUICE_BENCH_SERVER_PID_" + strings.ReplaceAll(strings.ReplaceAll(name, ".", "_"), "-", "_")); v != "" {
		pid, _ := strconv.Atoi(v)
		return pid
	}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if comm, err := os.ReadFile("/proc/" + d.Name() + "/comm"); err == nil && strings.TrimSpace(string(comm)) == name {
			return pid
		}
	}
	return 0
}

// procCPU reads a process's user and system time from /proc (in clock
// ticks of 10ms).
func procCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command (which may hold spaces) start after ')'.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

func BenchmarkQueueLaneLatency(b *testing.B) {
	const rate = 1000 // jobs per second, open loop
	for _, sys := range laneSystems {
		b.Run(sys.name, func(b *testing.B) {
			q := sys.open(b, 100)
			var mu sync.Mutex
			lat := make([]time.Duration, 0, b.N)
			all := make(chan struct{})
			stop := q.run(100, func(p []byte) {
				d := laneSince(p)
				mu.Lock()
				defer mu.Unlock()
				if lat = append(lat, d); len(lat) == b.N {
					close(all)
				}
			})
			defer stop()
			time.Sleep(100 * time.Millisecond) // let the worker start and go idle
			ctx := context.Background()
			jobs := make(chan struct{}, b.N)
			var wg sync.WaitGroup
			for g := 0; g < 32; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range jobs {
						if err := q.enqueue(ctx, laneStamp()); err != nil {
							b.Error(err)
						}
					}
				}()
			}
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				// Open loop: a late tick does not delay the ones after it.
				time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / rate)))
				jobs <- struct{}{}
			}
			close(jobs)
			wg.Wait()
			<-all
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
