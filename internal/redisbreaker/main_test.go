package redisbreaker

import (
	"os"
	"testing"

	"github.com/sluicehq/sluice/internal/redistest"
)

// TestMain keeps go-redis's log of the dials the recovery tests refuse on
// purpose out of a passing run's output (redistest.HoldLogs).
func TestMain(m *testing.M) {
	flush := redistest.HoldLogs()
	code := m.Run()
	flush(code)
	os.Exit(code)
}
