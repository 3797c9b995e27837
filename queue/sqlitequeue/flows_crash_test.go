package sqlitequeue_test

import (
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/queue/queuetest"
)

// TestCrashFlow is TestCrash with the jobs in one flow: after the kill
// every dependent still runs exactly once (twice only when it was in
// flight), after its parents, with their results; the group variant puts
// the flow in a group that completes once.
func TestCrashFlow(t *testing.T) {
	for _, group := range []string{"", "crawl"} {
		name := "flow"
		if group != "" {
			name = "flow-in-group"
		}
		t.Run(name, func(t *testing.T) {
			queuetest.Crash(t, queuetest.CrashConfig{
				DSN: filepath.Join(t.TempDir(), "crash.db"), Open: openDSN, Group: group, Flow: true,
			})
		})
	}
}
