package bench

// Job queue on Redis: queue/redisqueue (with queue.Worker) against
// hibiken/asynq, side by side in one run on one Redis, with no-op jobs:
//
//	cd bench && go test -c -o /tmp/rqbench.test . && for i in $(seq 11); do
//	  /tmp/rqbench.test -test.run '^$' -test.bench 'QueueRedis(Enqueue|Process)' -test.benchtime 20000x
//	  /tmp/rqbench.test -test.run '^$' -test.bench 'QueueRedisLatency' -test.benchtime 5000x
//	done
//
// Rounds alternate the systems, so a busy moment on a shared machine hits
// both; compare per-round ratios.
//
//   - Enqueue: jobs/s enqueued one call per job from 32 goroutines, each
//     call returning once Redis stored the job. redisqueue also shows a
//     batch row (EnqueueBatch of 100), which asynq has no counterpart for.
//   - Process: b.N jobs enqueued beforehand, then one worker process at
//     concurrency 10 or 100 drains them; jobs/s from the worker's start
//     until every job is recorded done in Redis (not just handed out).
//   - Latency: jobs enqueued at a steady rate (open loop) into an idle
//     worker at concurrency 100; enqueue-to-start p50 and p99, from just
//     before the enqueue call (the time travels in the payload) to the
//     start of the handler. asynq runs with its default TaskCheckInterval
//     (an idle server sleeps 1 s between looks) and tuned to 10 ms.
//
// Redis is SLUICE_BENCH_QUEUE_REDIS_URL (default redis://127.0.0.1:6379/13);
// that database is flushed before and after every case, so give the
// benchmark a database of its own. A Redis that does not answer skips it.

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

const rqQueue = "bench"

// rqTarget is one system under test, opened on a flushed database.
type rqTarget struct {
	// enqueue stores one job with payload p.
	enqueue func(ctx context.Context, p []byte) error
	// fill stores n jobs, as fast as the system allows (not measured).
	fill func(ctx context.Context, n int) error
	// run starts a worker at concurrency conc calling handle with each
	// job's payload, and returns a function that stops it.
	run func(conc int, handle func(p []byte)) (stop func())
	// unfinished counts jobs not yet recorded done (ready or running).
	unfinished func(ctx context.Context) (int64, error)
}

type rqSystem struct {
	name string
	open func(b *testing.B) rqTarget
}

var rqSystems = []rqSystem{
	{"redisqueue", rqOpenRedisQueue},
	{"asynq", func(b *testing.B) rqTarget { return rqOpenAsynq(b, 0) }},
}

// rqCooldown is redisqueue whose worker waits 10 ms after a lease that
// left slots free (WorkerConfig.LeaseCooldown): the start latency of
// asynq at a 10 ms check, for fewer store calls per job.
var rqCooldown = rqSystem{"redisqueue-cooldown10ms", func(b *testing.B) rqTarget {
	return rqOpenRedisQueueWith(b, func(c *queue.WorkerConfig) { c.LeaseCooldown = 10 * time.Millisecond })
}}

// rqRedis connects to the benchmark database and flushes it now and when
// the case ends.
func rqRedis(b *testing.B) (*redis.Client, *redis.Options) {
	url := os.Getenv("SLUICE_BENCH_QUEUE_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/13"
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		b.Fatalf("redis URL: %v", err)
	}
	c := redis.NewClient(opts)
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		b.Skipf("no Redis at %s: %v", url, err)
	}
	if err := c.FlushDB(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = c.FlushDB(context.Background()).Err()
		_ = c.Close()
	})
	return c, opts
}

// rqLinger is rqCooldown whose enqueues also wait up to 2 ms for others
// to run with them as one script (redisqueue.Options.EnqueueLinger):
// both sides of the trade asynq's check interval makes.
var rqLinger = rqSystem{"redisqueue-cooldown-linger", func(b *testing.B) rqTarget {
	return rqOpenRedisQueueOpts(b, redisqueue.Options{EnqueueLinger: 2 * time.Millisecond},
		func(c *queue.WorkerConfig) { c.LeaseCooldown = 10 * time.Millisecond })
}}

func rqOpenRedisQueue(b *testing.B) rqTarget { return rqOpenRedisQueueWith(b) }

// rqOpenRedisQueueWith opens redisqueue, its worker adjusted by tune.
func rqOpenRedisQueueWith(b *testing.B, tune ...func(*queue.WorkerConfig)) rqTarget {
	return rqOpenRedisQueueOpts(b, redisqueue.Options{}, tune...)
}

// rqOpenRedisQueueOpts opens redisqueue with opts, its worker adjusted by
// tune.
func rqOpenRedisQueueOpts(b *testing.B, opts redisqueue.Options, tune ...func(*queue.WorkerConfig)) rqTarget {
	c, _ := rqRedis(b)
	opts.Logger = rqQuiet
	be, err := redisqueue.New(c, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = be.Close() })
	return rqClientTarget(be, tune...)
}

// rqClientTarget drives a Sluice job backend through queue.Client and
// queue.Worker; tune, when given, adjusts the worker's configuration.
func rqClientTarget(be backend.Backend, tune ...func(*queue.WorkerConfig)) rqTarget {
	cl := queue.NewClient(be)
	return rqTarget{
		enqueue: func(ctx context.Context, p []byte) error {
			_, err := cl.Enqueue(ctx, queue.JobSpec{Queue: rqQueue, Kind: "noop", Payload: p})
			return err
		},
		fill: func(ctx context.Context, n int) error {
			for from := 0; from < n; from += 500 {
				specs := make([]queue.JobSpec, min(500, n-from))
				for i := range specs {
					specs[i] = queue.JobSpec{Queue: rqQueue, Kind: "noop", Payload: rqStamp()}
				}
				if _, err := cl.EnqueueBatch(ctx, specs); err != nil {
					return err
				}
			}
			return nil
		},
		run: func(conc int, handle func([]byte)) func() {
			cfg := queue.WorkerConfig{Queues: []string{rqQueue}, Concurrency: conc, Logger: rqQuiet}
			for _, f := range tune {
				f(&cfg)
			}
			w := queue.NewWorker(be, cfg)
			w.Handle("noop", queue.HandlerFunc(func(_ context.Context, j *queue.Job) ([]byte, error) {
				handle(j.Payload)
				return nil, nil
			}))
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = w.Run(ctx) }()
			return func() { cancel(); <-done }
		},
		unfinished: func(ctx context.Context) (int64, error) {
			st, err := cl.Stats(ctx)
			if err != nil {
				return 0, err
			}
			var n int64
			for _, s := range st {
				n += s.Counts[queue.StatePending] + s.Counts[queue.StateActive] + s.Counts[queue.StateRetrying]
			}
			return n, nil
		},
	}
}

// rqOpenAsynq opens asynq; checkEvery is its TaskCheckInterval (0: its
// default of 1 s).
func rqOpenAsynq(b *testing.B, checkEvery time.Duration) rqTarget {
	c, ropts := rqRedis(b)
	opt := asynq.RedisClientOpt{Addr: ropts.Addr, DB: ropts.DB, Password: ropts.Password}
	client := asynq.NewClient(opt)
	b.Cleanup(func() { _ = client.Close() })
	enqueue := func(ctx context.Context, p []byte) error {
		_, err := client.EnqueueContext(ctx, asynq.NewTask("noop", p), asynq.Queue(rqQueue))
		return err
	}
	return rqTarget{
		enqueue: enqueue,
		fill: func(ctx context.Context, n int) error {
			return rqParallel(16, n, func(int) error { return enqueue(ctx, rqStamp()) })
		},
		run: func(conc int, handle func([]byte)) func() {
			srv := asynq.NewServer(opt, asynq.Config{
				Concurrency: conc, Queues: map[string]int{rqQueue: 1}, TaskCheckInterval: checkEvery,
				Logger: rqAsynqLog{}, LogLevel: asynq.FatalLevel,
			})
			mux := asynq.NewServeMux()
			mux.HandleFunc("noop", func(_ context.Context, t *asynq.Task) error { handle(t.Payload()); return nil })
			if err := srv.Start(mux); err != nil {
				b.Fatal(err)
			}
			return srv.Shutdown
		},
		unfinished: func(ctx context.Context) (int64, error) {
			pipe := c.Pipeline()
			p := pipe.LLen(ctx, "asynq:{"+rqQueue+"}:pending")
			a := pipe.LLen(ctx, "asynq:{"+rqQueue+"}:active")
			if _, err := pipe.Exec(ctx); err != nil {
				return 0, err
			}
			return p.Val() + a.Val(), nil
		},
	}
}

var rqQuiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// rqAsynqLog drops asynq's log lines.
type rqAsynqLog struct{}

func (rqAsynqLog) Debug(...any) {}
func (rqAsynqLog) Info(...any)  {}
func (rqAsynqLog) Warn(...any)  {}
func (rqAsynqLog) Error(...any) {}
func (rqAsynqLog) Fatal(...any) {}

// rqParallel runs op(0..n-1) from g goroutines and returns the first error.
func rqParallel(g, n int, op func(i int) error) error {
	var next atomic.Int64
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	for w := 0; w < g; w++ {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if err := op(i); err != nil {
					first.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	if p := first.Load(); p != nil {
		return *p
	}
	return nil
}

// rqStamp is a payload carrying the current time.
func rqStamp() []byte { return binary.LittleEndian.AppendUint64(nil, uint64(time.Now().UnixNano())) }

func rqSince(p []byte) time.Duration {
	return time.Duration(time.Now().UnixNano() - int64(binary.LittleEndian.Uint64(p)))
}

func BenchmarkQueueRedisEnqueue(b *testing.B) {
	ctx := context.Background()
	for _, sys := range append(rqSystems[:1:1], rqLinger, rqSystems[1]) {
		b.Run("sys="+sys.name, func(b *testing.B) {
			q := sys.open(b)
			b.ResetTimer()
			start := time.Now()
			if err := rqParallel(32, b.N, func(int) error { return q.enqueue(ctx, rqStamp()) }); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
		})
	}
	b.Run("sys=redisqueue-batch100", func(b *testing.B) {
		c, _ := rqRedis(b)
		be, err := redisqueue.New(c, redisqueue.Options{Logger: rqQuiet})
		if err != nil {
			b.Fatal(err)
		}
		defer be.Close()
		cl := queue.NewClient(be)
		b.ResetTimer()
		start := time.Now()
		batches := (b.N + 99) / 100
		err = rqParallel(8, batches, func(i int) error {
			specs := make([]queue.JobSpec, min(100, b.N-i*100))
			for k := range specs {
				specs[k] = queue.JobSpec{Queue: rqQueue, Kind: "noop", Payload: rqStamp()}
			}
			_, err := cl.EnqueueBatch(ctx, specs)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
	})
}

func BenchmarkQueueRedisProcess(b *testing.B) {
	for _, sys := range append(rqSystems[:1:1], rqCooldown, rqLinger, rqSystems[1]) {
		for _, conc := range []int{10, 100} {
			b.Run(fmt.Sprintf("sys=%s/c=%d", sys.name, conc), func(b *testing.B) {
				rqProcess(b, sys.open(b), conc)
			})
		}
	}
}

// rqProcess fills q with b.N jobs, then drains them with one worker at
// concurrency conc and reports jobs/s from the worker's start until every
// job is recorded done.
func rqProcess(b *testing.B, q rqTarget, conc int) {
	ctx := context.Background()
	if err := q.fill(ctx, b.N); err != nil {
		b.Fatal(err)
	}
	var ran atomic.Int64
	all := make(chan struct{})
	b.ResetTimer()
	start := time.Now()
	stop := q.run(conc, func([]byte) {
		if ran.Add(1) == int64(b.N) {
			close(all)
		}
	})
	<-all
	rqWaitFinished(b, q)
	elapsed := time.Since(start)
	b.StopTimer()
	stop()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
}

// rqWaitFinished waits until the system records every job done.
func rqWaitFinished(b *testing.B, q rqTarget) {
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

func BenchmarkQueueRedisLatency(b *testing.B) {
	systems := []rqSystem{
		rqSystems[0],
		{"asynq", func(b *testing.B) rqTarget { return rqOpenAsynq(b, 0) }},
		{"asynq-check10ms", func(b *testing.B) rqTarget { return rqOpenAsynq(b, 10*time.Millisecond) }},
	}
	for _, rate := range []int{1000, 4000} {
		for _, sys := range systems {
			b.Run(fmt.Sprintf("sys=%s/rate=%d", sys.name, rate), func(b *testing.B) {
				rqLatency(b, sys.open(b), rate)
			})
		}
	}
}

// rqLatency enqueues b.N jobs at rate per second, open loop (a late tick
// does not slow the ones after it), into a worker at concurrency 100, and
// reports the enqueue-to-start percentiles.
func rqLatency(b *testing.B, q rqTarget, rate int) {
	var mu sync.Mutex
	lat := make([]time.Duration, 0, b.N)
	all := make(chan struct{})
	stop := q.run(100, func(p []byte) {
		d := rqSince(p)
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
		wg.Go(func() {
			for range jobs {
				if err := q.enqueue(ctx, rqStamp()); err != nil {
					b.Error(err)
				}
			}
		})
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))))
		jobs <- struct{}{}
	}
	close(jobs)
	wg.Wait()
	<-all
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
