package server

import (
	"errors"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
	"github.com/sluicehq/sluice/server/config"
)

// openRedisQueue opens the job backend of a Redis deployment: jobs on the
// same Redis and under the same prefix as the counters (their keys live in
// separate namespaces), recording events in its outbox when webhooks are
// configured. redisqueue warns at start when maxmemory-policy could evict
// jobs.
func openRedisQueue(client redis.UniversalClient, cfg *config.Config, log *slog.Logger) (backend.Backend, error) {
	if webhooksOn(cfg) && cfg.Storage.RedisMode == "cluster" {
		// Said here in the config's words: the outbox's keys are global,
		// so redisqueue keeps none on a Cluster.
		return nil, errors.New("server: webhooks.subscriptions need storage.redis_mode single or sentinel: the Redis job store records no events on a Redis Cluster")
	}
	return redisqueue.New(client, redisQueueOptions(cfg, log))
}
