package bench

// What processing a no-op job costs on Postgres, measured in CPU time and
// transactions rather than wall time, so the figures hold on a shared,
// busy machine where jobs/s swing with the neighbours' load:
//
//	cd bench && go test -run '^$' -bench 'QueuePostgresCost' -benchtime 10000x .
//
// For pgqueue and River tuned (see queue_postgres_test.go), at concurrency
// 10 and 100, each case fills b.N jobs and drains them with one worker,
// and reports per job: server-cpu-µs (user and system CPU of the server
// processes serving the benchmark database, read from /proc, so the
// server must run on this machine), client-cpu-µs (this process) and
// xacts (transactions the database committed, from pg_stat_database) and
// wal-bytes (write-ahead log the server wrote, the whole server's, so
// nothing else should write meanwhile).

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func BenchmarkQueuePostgresCost(b *testing.B) {
	for _, conc := range []int{10, 100} {
		for _, sys := range pgSystems {
			if sys.name == "river" {
				continue // at most ~100 jobs/s at c=10: not a fair opponent
			}
			b.Run(fmt.Sprintf("sys=%s/c=%d", sys.name, conc), func(b *testing.B) {
				pgCost(b, sys.open(b), conc)
			})
		}
	}
}

// pgCost drains b.N jobs from q at concurrency conc and reports what
// they cost the server, the client and the database per job.
func pgCost(b *testing.B, q rqTarget, conc int) {
	pgCostBy(b, q, []rqTarget{q}, conc)
}

// pgCostBy is pgCost with the jobs filled through q and drained by a
// worker at concurrency conc on each of workers at once.
func pgCostBy(b *testing.B, q rqTarget, workers []rqTarget, conc int) {
	ctx := context.Background()
	if err := q.fill(ctx, b.N); err != nil {
		b.Fatal(err)
	}
	// A server process that starts later (a connection the worker opens)
	// counts from zero, so its start-up is in; one that ends before the
	// last reading is missed (pools keep theirs while the worker runs).
	server0, x0, wal0, self0 := pgServerCPU(b), pgCommits(b), pgWALBytes(b), selfCPU()
	var ran atomic.Int64
	all := make(chan struct{})
	b.ResetTimer()
	start := time.Now()
	stops := make([]func(), len(workers))
	for i, w := range workers {
		stops[i] = w.run(conc, func([]byte) {
			if ran.Add(1) == int64(b.N) {
				close(all)
			}
		})
	}
	<-all
	rqWaitFinished(b, q)
	elapsed := time.Since(start)
	b.StopTimer()
	server1, self1, x1, wal1 := pgServerCPU(b), selfCPU(), pgCommits(b), pgWALBytes(b)
	for _, stop := range stops {
		stop()
	}
	var server time.Duration
	for pid, t := range server1 {
		server += t - server0[pid]
	}
	n := float64(b.N)
	b.ReportMetric(n/elapsed.Seconds(), "jobs/s")
	b.ReportMetric(float64(server.Microseconds())/n, "server-cpu-µs/job")
	b.ReportMetric(float64((self1-self0).Microseconds())/n, "client-cpu-µs/job")
	b.ReportMetric(float64(x1-x0)/n, "xacts/job")
	b.ReportMetric(float64(wal1-wal0)/n, "wal-bytes/job")
}

// pgWALBytes returns the server's write-ahead log position in bytes.
func pgWALBytes(b *testing.B) int64 {
	c := pgConnect(b)
	defer c.Close(context.Background())
	var n int64
	if err := c.QueryRow(context.Background(),
		`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// pgServerCPU returns the CPU time so far of each server process
// connected to the benchmark database (but the one asking).
func pgServerCPU(b *testing.B) map[int]time.Duration {
	c := pgConnect(b)
	defer c.Close(context.Background())
	rows, err := c.Query(context.Background(), `SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	if err != nil {
		b.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		b.Fatal(err)
	}
	out := make(map[int]time.Duration, len(pids))
	for _, pid := range pids {
		out[int(pid)] = procCPU(int(pid))
	}
	return out
}

// pgCommits returns the transactions the benchmark database has
// committed (the statistics are per transaction: a fresh connection sees
// the latest).
func pgCommits(b *testing.B) int64 {
	c := pgConnect(b)
	defer c.Close(context.Background())
	var n int64
	if err := c.QueryRow(context.Background(), `SELECT xact_commit FROM pg_stat_database
		WHERE datname = current_database()`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

func pgConnect(b *testing.B) *pgx.Conn {
	c, err := pgx.Connect(context.Background(), pgURL(b))
	if err != nil {
		b.Fatal(err)
	}
	return c
}
