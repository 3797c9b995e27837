package sqlitequeue_test

import (
	"testing"

	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetest"
)

// BenchmarkFlowFanIn: queuetest.BenchFlowFanIn on this backend (a job
// waiting for 1,000 parents: last parent's end to its start).
func BenchmarkFlowFanIn(b *testing.B) {
	queuetest.BenchFlowFanIn(b, func(b *testing.B) backend.Backend { return open(b, nil) })
}
