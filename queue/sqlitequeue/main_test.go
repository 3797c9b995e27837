package sqlitequeue_test

import (
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

func TestMain(m *testing.M) {
	queuetest.CrashWorkerMain(openDSN)
	goleak.VerifyTestMain(m)
}

// openDSN opens the queue file named by dsn (a path), in this process or in
// a crash-test worker process.
func openDSN(dsn string) (backend.Backend, func() error, error) {
	b, err := sqlitequeue.Open(dsn, sqlitequeue.Options{})
	if err != nil {
		return nil, nil, err
	}
	return b, b.Close, nil
}

// TestCrash kills a worker process with SIGKILL mid-job; a second process
// sharing the file finishes everything. The group variant puts the jobs in
// a group with a completion job: after the kill and the rescues, the group
// completes with exactly one.
func TestCrash(t *testing.T) {
	for _, group := range []string{"", "crawl"} {
		name := "plain"
		if group != "" {
			name = "group"
		}
		t.Run(name, func(t *testing.T) {
			queuetest.Crash(t, queuetest.CrashConfig{
				DSN:   filepath.Join(t.TempDir(), "crash.db"),
				Open:  openDSN,
				Group: group,
			})
		})
	}
}

// TestCrashSchedules kills two of three scheduler processes sharing the
// file with SIGKILL while a schedule ticks: every tick has exactly one job
// (queuetest.CrashSchedules).
func TestCrashSchedules(t *testing.T) {
	queuetest.CrashSchedules(t, queuetest.CrashConfig{DSN: filepath.Join(t.TempDir(), "crash.db"), Open: openDSN})
}
