package server

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/redisqueue"
	"github.com/sluicehq/sluice/server/config"
)

// gapWarnings lists where settings of feature (queue.CapTenants or
// queue.CapGroups) do not hold, for the answer to the call that set them:
// the queues of routed backends that cannot enforce them, whose jobs
// needing them are refused at enqueue (see queue.Gaps).
func (s *Server) gapWarnings(feature queue.Capability) []string {
	gaps := s.jobs.Gaps(feature)
	if len(gaps) == 0 {
		return nil
	}
	out := make([]string, len(gaps))
	for i, g := range gaps {
		out[i] = fmt.Sprintf("does not hold on %s", g)
	}
	return out
}

// notEnforcedDetail names the queue, the backend and what it cannot
// enforce, with the job field in the API's words.
func notEnforcedDetail(err error) string {
	var ne *queue.NotEnforcedError
	if !errors.As(err, &ne) {
		return err.Error()
	}
	return fmt.Sprintf("queue %s is on backend %s, which cannot enforce %s: %s (%s is set); nothing was stored",
		ne.Queue, ne.Backend, ne.Feature, ne.Reason, apiField(ne.Path))
}

// openLaneScheduler opens the Redis store that schedules the lane's jobs
// with a tenant or a group (queues.rabbitmq.scheduler: redis), under keys
// of its own beside the storage prefix, so its jobs never mix with those
// of a Redis job store on the same prefix.
func openLaneScheduler(client redis.UniversalClient, cfg *config.Config, log *slog.Logger) (*redisqueue.Backend, error) {
	ns := strings.TrimSuffix(string(keyspace.Prefix(cfg.Storage.Prefix)), ":")
	if ns == "" {
		ns = strings.TrimSuffix(string(keyspace.DefaultPrefix), ":")
	}
	s, err := redisqueue.New(client, redisqueue.Options{Prefix: keyspace.Prefix(ns + ":lane-sched:"), Logger: log})
	if err != nil {
		return nil, fmt.Errorf("server: queues.rabbitmq.scheduler: %w", err)
	}
	return s, nil
}
