package redisqueue

import (
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisbreaker"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// Defaults of the breaker's Options.
const (
	DefaultBreakerFailures      = redisbreaker.DefaultFailures
	DefaultBreakerProbeInterval = redisbreaker.DefaultProbeInterval
)

// ErrBreakerOpen is matched by the errors of calls that failed at once
// because Redis was found unreachable (see Options.DisableBreaker).
var ErrBreakerOpen = redisbreaker.ErrOpen

// attachBreaker gives client its circuit breaker, unless opts turn it off.
// Every Backend and redislimit Store on one client shares one breaker,
// made with the options of the first to attach.
func attachBreaker(client redis.UniversalClient, opts Options) error {
	switch {
	case opts.BreakerFailures < 0:
		return backend.InvalidArgument(queue.Field("Options", "BreakerFailures"), "must not be negative, got %d", opts.BreakerFailures)
	case opts.BreakerProbeInterval < 0:
		return backend.InvalidArgument(queue.Field("Options", "BreakerProbeInterval"), "must not be negative, got %s", opts.BreakerProbeInterval)
	case opts.DisableBreaker:
		return nil
	}
	_, err := redisbreaker.Attach(client, redisbreaker.Options{
		Failures: opts.BreakerFailures, ProbeInterval: opts.BreakerProbeInterval, Clock: opts.Clock, Logger: opts.Logger,
	})
	return err
}
