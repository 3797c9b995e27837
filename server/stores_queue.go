package server

import (
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/config"
)

// openRedisQueue opens the job backend for a Redis deployment. Until the
// Redis job backend is wired in, jobs stay in the embedded SQLite file and
// a warning says so.
func openRedisQueue(_ redis.UniversalClient, cfg *config.Config, log *slog.Logger) (queue.Backend, error) {
	log.Warn("server: jobs stay in the embedded SQLite store; counters are on Redis", slog.String("data_dir", cfg.Storage.DataDir))
	return openSQLite(cfg)
}
