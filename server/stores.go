package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisbreaker"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
	"github.com/sluicehq/sluice/server/config"
)

// Stores are the rate-limit store and job backend a config names.
type Stores struct {
	// Limits counts rate limits.
	Limits ratelimit.Store
	// Queue holds jobs: one backend, or a router (queue/mux) over every
	// backend queues are placed on.
	Queue backend.Backend
	// Kind is "embedded" or "redis", for logs, followed by the job
	// backends when queues are placed elsewhere ("embedded, jobs on
	// embedded+rabbitmq").
	Kind string

	ping    func(ctx context.Context) error
	closers []func() error
	sqlite  string // the SQLite job file, when a queue is on it
	redis   string // the Redis address (no credentials), when used
}

// OpenStores opens what cfg.Storage names: with a Redis URL, counters
// (redislimit) and jobs (redisqueue) on that Redis; without, in-process
// counters (memlimit) and an SQLite job store at <data_dir>/jobs.db,
// creating the directory on first run. Queues that queues.backends places
// elsewhere are on their own backends, behind one router (see
// openQueues).
//
// A Redis that does not answer is no reason to fail: the stores open all
// the same, with the client's circuit breaker open (see openRedis), so
// that scenes answer by their failure mode, job calls and Ping fail at
// once, and everything works again as soon as Redis answers.
func OpenStores(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Stores, error) {
	if cfg.Storage.RedisURL != "" {
		return openRedis(ctx, cfg, log)
	}
	st := &Stores{Kind: "embedded"}
	mem := memlimit.New(memlimitOptions(cfg))
	st.Limits = mem
	st.closers = append(st.closers, mem.Close)
	if err := st.openQueues(ctx, cfg, log, nil); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// sqlitePath is the embedded job store's file.
func sqlitePath(cfg *config.Config) string { return filepath.Join(cfg.Storage.DataDir, "jobs.db") }

func openSQLite(cfg *config.Config) (*sqlitequeue.Backend, error) {
	dir := cfg.Storage.DataDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("server: data dir: %w", err)
	}
	return sqlitequeue.Open(sqlitePath(cfg), sqliteOptions(cfg))
}

// startPing bounds the check of Redis at start.
const startPing = time.Second

// openRedis opens the Redis stores. The client's circuit breaker is
// attached first, logging to log, so the stores share it; when Redis does
// not answer a PING at start, the breaker is opened at once, so that
// nothing else at start (redisqueue's maxmemory-policy check) waits for
// Redis either, and a warning says how the server serves meanwhile.
func openRedis(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Stores, error) {
	client, err := config.RedisClient(cfg.Storage)
	if err != nil {
		return nil, errors.New("server: storage.redis_url is not a valid redis:// URL") // never echo it: it may hold a password
	}
	st := &Stores{Kind: "redis", redis: redisAddress(cfg.Storage), closers: []func() error{client.Close}}
	br, err := redisbreaker.Attach(client, breakerOptions(cfg, log))
	if err != nil {
		st.Close()
		return nil, err
	}
	st.ping = func(ctx context.Context) error { return client.Ping(ctx).Err() }
	pctx, cancel := context.WithTimeout(ctx, startPing)
	err = st.ping(pctx)
	cancel()
	if err != nil {
		br.Trip(err)
		log.Warn("server: Redis does not answer: serving scenes by their failure mode and job calls with 503 until it does",
			"redis", st.redis, "mode", cfg.Storage.RedisMode, "error", err)
	}
	rl, err := redislimit.New(client, redisLimitOptions(cfg))
	if err != nil {
		st.Close()
		return nil, err
	}
	st.Limits = rl
	st.closers = append([]func() error{rl.Close}, st.closers...)
	if err := st.openQueues(ctx, cfg, log, client); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// redisAddress names the Redis of s for logs: its address(es) and
// database, or the Sentinel master and sentinels, never the credentials.
func redisAddress(s config.Storage) string {
	switch s.RedisMode {
	case "cluster":
		if o, err := redis.ParseClusterURL(s.RedisURL); err == nil {
			return strings.Join(o.Addrs, ",")
		}
	case "sentinel":
		if o, err := redis.ParseFailoverURL(s.RedisURL); err == nil {
			return fmt.Sprintf("%s via %s/%d", o.MasterName, strings.Join(o.SentinelAddrs, ","), o.DB)
		}
	default:
		if o, err := redis.ParseURL(s.RedisURL); err == nil {
			return fmt.Sprintf("%s/%d", o.Addr, o.DB)
		}
	}
	return "(unparsable URL)"
}

// where names what the stores are on, for the start log: the SQLite file
// (as an absolute path) and the Redis address, when used.
func (st *Stores) where() []any {
	var attrs []any
	if st.sqlite != "" {
		p := st.sqlite
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		attrs = append(attrs, "sqlite", p)
	}
	if st.redis != "" {
		attrs = append(attrs, "redis", st.redis)
	}
	return attrs
}

// Ping checks that the stores answer.
func (st *Stores) Ping(ctx context.Context) error {
	if st.ping == nil {
		return nil
	}
	return st.ping(ctx)
}

// Close closes everything opened, queue first, client last.
func (st *Stores) Close() error {
	var errs []error
	for _, c := range st.closers {
		errs = append(errs, c())
	}
	st.closers = nil
	return errors.Join(errs...)
}
