package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
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
	Queue queue.Backend
	// Kind is "embedded" or "redis", for logs, followed by the job
	// backends when queues are placed elsewhere ("embedded, jobs on
	// embedded+rabbitmq").
	Kind string

	ping    func(ctx context.Context) error
	closers []func() error
}

// OpenStores opens what cfg.Storage names: with a Redis URL, counters
// (redislimit) and jobs (redisqueue) on that Redis, checked with a PING;
// without, in-process counters (memlimit) and an SQLite job store at
// <data_dir>/jobs.db, creating the directory on first run. Queues that
// queues.backends places elsewhere are on their own backends, behind one
// router (see openQueues).
func OpenStores(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Stores, error) {
	if cfg.Storage.RedisURL != "" {
		return openRedis(ctx, cfg, log)
	}
	st := &Stores{Kind: "embedded"}
	mem := memlimit.New(memlimit.Options{})
	st.Limits = mem
	st.closers = append(st.closers, mem.Close)
	if err := st.openQueues(ctx, cfg, log, nil); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

func openSQLite(cfg *config.Config) (*sqlitequeue.Backend, error) {
	dir := cfg.Storage.DataDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("server: data dir: %w", err)
	}
	return sqlitequeue.Open(filepath.Join(dir, "jobs.db"), sqlitequeue.Options{Outbox: webhooksOn(cfg)})
}

func openRedis(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Stores, error) {
	client, err := config.RedisClient(cfg.Storage)
	if err != nil {
		return nil, errors.New("server: storage.redis_url is not a valid redis:// URL") // never echo it: it may hold a password
	}
	st := &Stores{Kind: "redis", closers: []func() error{client.Close}}
	st.ping = func(ctx context.Context) error { return client.Ping(ctx).Err() }
	if err := st.ping(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("server: redis (%s mode) unreachable: %w", cfg.Storage.RedisMode, err)
	}
	rl, err := redislimit.New(client, redislimit.Options{Prefix: keyspace.Prefix(cfg.Storage.Prefix)})
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
