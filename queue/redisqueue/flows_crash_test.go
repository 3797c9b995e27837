package redisqueue_test

import (
	"os"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/sluicehq/sluice/queue/queuetest"
)

// TestCrashFlow is TestCrash with the jobs in one flow (see
// queuetest.CrashConfig.Flow), on miniredis and, with SLUICE_REDIS_URL
// set, on real Redis.
func TestCrashFlow(t *testing.T) {
	for _, group := range []string{"", "crawl"} {
		name := "flow"
		if group != "" {
			name = "flow-in-group"
		}
		t.Run(name, func(t *testing.T) {
			t.Run("miniredis", func(t *testing.T) {
				m := miniredis.RunT(t)
				queuetest.Crash(t, queuetest.CrashConfig{DSN: string(randomPrefix()) + " redis://" + m.Addr(), Open: openDSN, Group: group, Flow: true})
			})
			t.Run("redis", func(t *testing.T) {
				s := realServer(t)
				queuetest.Crash(t, queuetest.CrashConfig{DSN: string(s.prefix) + " " + os.Getenv("SLUICE_REDIS_URL"), Open: openDSN, Group: group, Flow: true})
			})
		})
	}
}
