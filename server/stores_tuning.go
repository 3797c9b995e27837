package server

import (
	"log/slog"

	"github.com/sluicehq/sluice/internal/redisbreaker"
	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue/redisqueue"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
	"github.com/sluicehq/sluice/server/config"
)

// The options each store opens with: storage.* of the config. Every
// tuning key is read here and nowhere else, so a test of these functions
// and of OpenStores covers them all.

func sqliteOptions(cfg *config.Config) sqlitequeue.Options {
	t := cfg.Storage.SQLite
	return sqlitequeue.Options{BusyTimeout: t.BusyTimeout.D(), ReadConns: t.ReadConns, Durable: t.Durable, Outbox: outboxOn(cfg),
		Events: eventsOn(cfg)}
}

func redisQueueOptions(cfg *config.Config, log *slog.Logger) redisqueue.Options {
	t := cfg.Storage.RedisQueue
	return redisqueue.Options{
		Prefix: keyspace.Prefix(cfg.Storage.Prefix), Logger: log, Outbox: outboxOn(cfg),
		Events: eventsOn(cfg) && cfg.Storage.RedisMode != "cluster", EventsMaxLen: cfg.Queues.Events.MaxEvents,
		DisableBatching: t.DisableBatching, MaxBatch: t.MaxBatch, Senders: t.Senders,
		CompleteLinger: t.CompleteLinger.D(), EnqueueLinger: t.EnqueueLinger.D(),
	}
}

func redisLimitOptions(cfg *config.Config) redislimit.Options {
	t := cfg.Storage.RedisLimits
	return redislimit.Options{
		Prefix:          keyspace.Prefix(cfg.Storage.Prefix),
		DisableBatching: t.DisableBatching, MaxBatch: t.MaxBatch, Pipelines: t.Pipelines,
		DenyCache: t.DenyCache, DenyCacheSize: t.DenyCacheSize,
	}
}

// breakerOptions are the options of the breaker the server attaches to its
// Redis client before anything else, so that both stores share it (their
// own Breaker* options would apply only to a breaker they attach).
func breakerOptions(cfg *config.Config, log *slog.Logger) redisbreaker.Options {
	b := cfg.Storage.RedisBreaker
	return redisbreaker.Options{Failures: b.Failures, ProbeInterval: b.ProbeInterval.D(), Logger: log}
}

func memlimitOptions(cfg *config.Config) memlimit.Options {
	t := cfg.Storage.MemoryLimits
	return memlimit.Options{Shards: t.Shards, MaxKeys: t.MaxKeys, SweepInterval: t.SweepInterval.D()}
}
