package bench

// Job queue on Postgres: queue/pgqueue (with queue.Worker) against
// riverqueue/river, side by side in one run on one Postgres, with no-op
// jobs — the same cases, method and target shape as the Redis queue
// comparison in queue_redis_test.go:
//
//	cd bench && go test -c -o /tmp/pgbench.test . && for i in $(seq 5); do
//	  /tmp/pgbench.test -test.run '^$' -test.bench 'QueuePostgres(Enqueue|Process)' -test.benchtime 10000x
//	  /tmp/pgbench.test -test.run '^$' -test.bench 'QueuePostgresLatency' -test.benchtime 5000x
//	done
//
// Rounds alternate the systems, so a busy moment on a shared machine hits
// both; compare per-round ratios. River runs with its defaults (LISTEN/NOTIFY
// wake-ups, a 100 ms fetch cooldown and a 1 s poll: at most one fetch of
// MaxWorkers jobs per 100 ms, so about 100 jobs/s at concurrency 10) and
// tuned (river-tuned: a 1 ms cooldown, its minimum, and a 10 ms poll), the
// fair opponent for throughput.
//
// Postgres is SLUICE_BENCH_POSTGRES_URL (default
// postgres://postgres@127.0.0.1:5432/sluice_bench?sslmode=disable; the
// database is created when missing). Each system keeps its tables in a
// schema of its own there, emptied before every case. A Postgres that does
// not answer skips the benchmark.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/pgqueue"
)

const pgRiverSchema = "river_bench"

// pgURL is the benchmark database's URL, created when missing.
func pgURL(b *testing.B) string {
	u := os.Getenv("SLUICE_BENCH_POSTGRES_URL")
	if u == "" {
		u = "postgres://postgres@127.0.0.1:5432/sluice_bench?sslmode=disable"
	}
	pgCreateOnce.Do(func() { pgCreateErr = pgCreateDB(u) })
	if pgCreateErr != nil {
		b.Skipf("no Postgres at %s: %v", u, pgCreateErr)
	}
	return u
}

var (
	pgCreateOnce sync.Once
	pgCreateErr  error
)

// pgCreateDB creates the database u names, through the server's postgres
// database, unless it exists.
func pgCreateDB(u string) error {
	parsed, err := url.Parse(u)
	if err != nil {
		return err
	}
	name := strings.TrimPrefix(parsed.Path, "/")
	admin := *parsed
	admin.Path = "/postgres"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, admin.String())
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	var exists bool
	if err := c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	_, err = c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return err
}

// pgPool opens a pool on the benchmark database, closed when the case ends.
func pgPool(b *testing.B, maxConns int) *pgxpool.Pool {
	cfg, err := pgxpool.ParseConfig(pgURL(b))
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = int32(maxConns)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return pool
}

// pgNoop is River's no-op job; P carries the enqueue time.
type pgNoop struct {
	P []byte `json:"p"`
}

func (pgNoop) Kind() string { return "noop" }

type pgNoopWorker struct {
	river.WorkerDefaults[pgNoop]
	handle func([]byte)
}

func (w *pgNoopWorker) Work(_ context.Context, j *river.Job[pgNoop]) error {
	w.handle(j.Args.P)
	return nil
}

// pgOpenRiver opens River in its own schema, migrated and emptied; tuned
// shortens its fetch cooldown and poll as its docs allow for low latency.
func pgOpenRiver(b *testing.B, tuned bool) rqTarget {
	pool := pgPool(b, 40)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgRiverSchema); err != nil {
		b.Fatal(err)
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: pgRiverSchema, Logger: rqQuiet})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "TRUNCATE "+pgRiverSchema+".river_job"); err != nil {
		b.Fatal(err)
	}
	base := func() *river.Config {
		c := &river.Config{Schema: pgRiverSchema, Logger: rqQuiet}
		if tuned {
			c.FetchCooldown, c.FetchPollInterval = time.Millisecond, 10*time.Millisecond
		}
		return c
	}
	inserter, err := river.NewClient(riverpgxv5.New(pool), base())
	if err != nil {
		b.Fatal(err)
	}
	opts := &river.InsertOpts{Queue: rqQueue}
	return rqTarget{
		enqueue: func(ctx context.Context, p []byte) error {
			_, err := inserter.Insert(ctx, pgNoop{P: p}, opts)
			return err
		},
		fill: func(ctx context.Context, n int) error {
			for from := 0; from < n; from += 1000 {
				params := make([]river.InsertManyParams, min(1000, n-from))
				for i := range params {
					params[i] = river.InsertManyParams{Args: pgNoop{P: rqStamp()}, InsertOpts: opts}
				}
				if _, err := inserter.InsertManyFast(ctx, params); err != nil {
					return err
				}
			}
			return nil
		},
		run: func(conc int, handle func([]byte)) func() {
			workers := river.NewWorkers()
			river.AddWorker(workers, &pgNoopWorker{handle: handle})
			cfg := base()
			cfg.Queues = map[string]river.QueueConfig{rqQueue: {MaxWorkers: conc}}
			cfg.Workers = workers
			c, err := river.NewClient(riverpgxv5.New(pool), cfg)
			if err != nil {
				b.Fatal(err)
			}
			if err := c.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			return func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := c.Stop(ctx); err != nil && !errors.Is(err, context.Canceled) {
					b.Error(err)
				}
			}
		},
		unfinished: func(ctx context.Context) (int64, error) {
			var n int64
			err := pool.QueryRow(ctx, `SELECT count(*) FROM `+pgRiverSchema+`.river_job
				WHERE state IN ('available', 'running', 'retryable', 'scheduled', 'pending')`).Scan(&n)
			return n, err
		},
	}
}

// pgSystems are the systems the Postgres cases compare, in the order
// each round runs them.
var pgSystems = []rqSystem{
	{"pgqueue", func(b *testing.B) rqTarget { return pgOpenPgqueue(b) }},
	// pgqueue whose worker holds as many jobs again as it runs
	// (WorkerConfig.Prefetch = Concurrency): the next jobs are in hand
	// when slots free, and the lease runs while the work does.
	{"pgqueue-prefetch", func(b *testing.B) rqTarget {
		return pgOpenPgqueue(b, func(c *queue.WorkerConfig) { c.Prefetch = c.Concurrency })
	}},
	{"river", func(b *testing.B) rqTarget { return pgOpenRiver(b, false) }},
	{"river-tuned", func(b *testing.B) rqTarget { return pgOpenRiver(b, true) }},
}

func BenchmarkQueuePostgresEnqueue(b *testing.B) {
	ctx := context.Background()
	for _, sys := range pgSystems {
		b.Run("sys="+sys.name, func(b *testing.B) {
			q := sys.open(b)
			b.ResetTimer()
			start := time.Now()
			if err := rqParallel(32, b.N, func(int) error { return q.enqueue(ctx, rqStamp()) }); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
		})
		b.Run("sys="+sys.name+"-batch100", func(b *testing.B) {
			q := sys.open(b)
			b.ResetTimer()
			start := time.Now()
			if err := rqParallel(8, (b.N+99)/100, func(i int) error { return q.fill(ctx, min(100, b.N-i*100)) }); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
		})
	}
}

func BenchmarkQueuePostgresProcess(b *testing.B) {
	for _, conc := range []int{10, 100} {
		for _, sys := range pgSystems {
			b.Run(fmt.Sprintf("sys=%s/c=%d", sys.name, conc), func(b *testing.B) {
				rqProcess(b, sys.open(b), conc)
			})
		}
	}
}

// BenchmarkQueuePostgresWorkers drains the jobs with four workers of
// concurrency 25, each on a store (River: a client and pool) of its own,
// as four worker processes would: the hundred handlers of the c=100 case,
// split. Each store batches its own outcomes and leases for itself. It
// reports what BenchmarkQueuePostgresCost does.
func BenchmarkQueuePostgresWorkers(b *testing.B) {
	for _, sys := range pgSystems {
		if sys.name == "river" {
			continue // see BenchmarkQueuePostgresCost
		}
		b.Run("sys="+sys.name+"/workers=4x25", func(b *testing.B) {
			// Every store is opened before the fill: opening one empties
			// the tables.
			q := sys.open(b)
			workers := make([]rqTarget, 4)
			for i := range workers {
				workers[i] = sys.open(b)
			}
			pgCostBy(b, q, workers, 25)
		})
	}
}

func BenchmarkQueuePostgresLatency(b *testing.B) {
	for _, rate := range []int{1000} {
		for _, sys := range pgSystems {
			b.Run(fmt.Sprintf("sys=%s/rate=%d", sys.name, rate), func(b *testing.B) {
				rqLatency(b, sys.open(b), rate)
			})
		}
	}
}

const pgSluiceSchema = "sluice_bench"

// pgOpenPgqueue opens queue/pgqueue in a schema of its own, migrated and
// emptied as River's is: its tables are truncated, not dropped, so no case
// starts in the I/O of dropping and creating them.
func pgOpenPgqueue(b *testing.B, tune ...func(*queue.WorkerConfig)) rqTarget {
	u := pgURL(b)
	ctx := context.Background()
	be, err := pgqueue.Open(ctx, u, pgqueue.Options{Schema: pgSluiceSchema, MaxConns: 40})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = be.Close() })
	_, err = be.Pool().Exec(ctx, `DO $$ DECLARE t text; BEGIN
		FOR t IN SELECT quote_ident(schemaname) || '.' || quote_ident(tablename) FROM pg_tables
			WHERE schemaname = '`+pgSluiceSchema+`' AND tablename <> 'schema_migrations' LOOP
			EXECUTE 'TRUNCATE ' || t || ' RESTART IDENTITY CASCADE';
		END LOOP; END $$`)
	if err != nil {
		b.Fatal(err)
	}
	t := rqClientTarget(be, tune...)
	// Counted as River's are: the jobs not yet final, read from the
	// index of queue and state. Stats counts every state, the finished
	// jobs too, so each of the finish line's polls read every job there
	// is and took CPU from the jobs still running.
	t.unfinished = func(ctx context.Context) (n int64, err error) {
		err = be.Pool().QueryRow(ctx, `SELECT count(*) FROM `+pgSluiceSchema+`.jobs
			WHERE queue = $1 AND state IN ('pending', 'active', 'retrying', 'scheduled', 'waiting')`, rqQueue).Scan(&n)
		return n, err
	}
	return t
}
