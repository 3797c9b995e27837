package pgqueue_test

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/pgqueue"
	"github.com/sluicehq/sluice/queue/queuetest"
)

func TestMain(m *testing.M) {
	queuetest.CrashWorkerMain(openDSN)
	goleak.VerifyTestMain(m)
}

// testConns bounds each test store's pool: the suite runs many stores at
// once against one server.
const testConns = 4

// open opens a store in a fresh schema of the test database, dropped when
// t ends, reading the time from clk; it skips t without a database.
func open(t testing.TB, clk clock.Clock) *pgqueue.Store {
	t.Helper()
	return openWith(t, clk, pgqueue.Options{})
}

// openWith is open with the options of opts beside the schema, clock and
// pool size.
func openWith(t testing.TB, clk clock.Clock, opts pgqueue.Options) *pgqueue.Store {
	t.Helper()
	url := pgtest.URL(t)
	opts.Schema, opts.Clock, opts.MaxConns = pgtest.Schema(t, url), clk, testConns
	s, err := pgqueue.Open(context.Background(), url, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openDSN opens the store named by dsn, "<schema> <url>", in a crash-test
// worker process, whose connections are named after the schema (see
// crashApp).
func openDSN(dsn string) (backend.Backend, func() error, error) {
	schema, url, _ := cut(dsn)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	url += sep + "application_name=" + crashApp(schema)
	s, err := pgqueue.Open(context.Background(), url, pgqueue.Options{Schema: schema, MaxConns: testConns})
	if err != nil {
		return nil, nil, err
	}
	return s, s.Close, nil
}

// crashApp is the application name of the crash-test workers' connections
// to schema.
func crashApp(schema string) string { return "crash-" + schema }

func cut(dsn string) (schema, url string, ok bool) {
	for i := range dsn {
		if dsn[i] == ' ' {
			return dsn[:i], dsn[i+1:], true
		}
	}
	return "", dsn, false
}
