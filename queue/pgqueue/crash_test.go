package pgqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/pgqueue"
	"github.com/sluicehq/sluice/queue/queuetest"
)

// TestCrash kills a worker process with SIGKILL mid-job; a second process
// sharing the schema rescues its jobs and finishes everything: every job
// completes, and none runs twice except those in flight at the kill.
func TestCrash(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url)
	queuetest.Crash(t, queuetest.CrashConfig{
		DSN: schema + " " + url,
		Open: func(string) (backend.Backend, func() error, error) {
			s, err := pgqueue.Open(context.Background(), url, pgqueue.Options{Schema: schema, MaxConns: testConns})
			if err != nil {
				return nil, nil, err
			}
			return settledView{s, crashApp(schema)}, s.Close, nil
		},
	})
}

// settledView is the crash test's own view of the store: before it lists
// jobs, it waits until no connection of the workers is running a
// statement. A statement the server received before the kill still runs
// and commits after it (the server learns of the dead client only when it
// answers), so the jobs the test reads as in flight at the kill are
// those left once the killed worker's last writes have landed.
type settledView struct {
	*pgqueue.Store
	app string
}

func (v settledView) List(ctx context.Context, f queue.ListFilter) (*queue.Page, error) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		err := v.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND state = 'active'`, v.app).Scan(&n)
		if err != nil || n == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	return v.Store.List(ctx, f)
}

// TestCrashSchedules kills two of three scheduler processes sharing the
// schema with SIGKILL while a schedule ticks every second: every tick has
// exactly one job (queuetest.CrashSchedules).
func TestCrashSchedules(t *testing.T) {
	url := pgtest.URL(t)
	queuetest.CrashSchedules(t, queuetest.CrashConfig{DSN: pgtest.Schema(t, url) + " " + url, Open: openDSN})
}
