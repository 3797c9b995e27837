package server

import (
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/redisqueue"
	"github.com/sluicehq/sluice/server/config"
)

// openRedisQueue opens the job backend of a Redis deployment: jobs on the
// same Redis and under the same prefix as the counters (their keys live in
// separate namespaces). redisqueue warns at start when maxmemory-policy
// could evict jobs.
func openRedisQueue(client redis.UniversalClient, cfg *config.Config, log *slog.Logger) (queue.Backend, error) {
	return redisqueue.New(client, redisqueue.Options{Prefix: keyspace.Prefix(cfg.Storage.Prefix), Logger: log})
}
