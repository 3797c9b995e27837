package redisqueue_test

import (
	"testing"

	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// BenchmarkFlowFanIn: queuetest.BenchFlowFanIn on this backend (a job
// waiting for 1,000 parents: last parent's end to its start); on real
// Redis with SLUICE_REDIS_URL set, else miniredis.
func BenchmarkFlowFanIn(b *testing.B) {
	queuetest.BenchFlowFanIn(b, func(b *testing.B) backend.Backend { return benchServer(b).backend(b, redisqueue.Options{}) })
}
