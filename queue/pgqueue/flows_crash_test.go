package pgqueue_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/pgqueue"
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
			url := pgtest.URL(t)
			schema := pgtest.Schema(t, url)
			queuetest.Crash(t, queuetest.CrashConfig{
				DSN: schema + " " + url, Group: group, Flow: true,
				Open: func(string) (backend.Backend, func() error, error) {
					s, err := pgqueue.Open(context.Background(), url, pgqueue.Options{Schema: schema, MaxConns: testConns})
					if err != nil {
						return nil, nil, err
					}
					return settledView{s, crashApp(schema)}, s.Close, nil
				},
			})
		})
	}
}
