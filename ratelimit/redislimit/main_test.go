package redislimit_test

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
)

// TestMain keeps go-redis's log of the dials that outage tests refuse on
// purpose out of a passing run's output (redistest.HoldLogs).
func TestMain(m *testing.M) {
	runProcWorker() // processes_test.go: a worker process never returns
	goleak.VerifyTestMain(m, goleak.Cleanup(redistest.HoldLogs()))
}

// epoch is where fake clocks start: a multiple of every window the tests use.
var epoch = time.Unix(1_700_000_000, 0)

// backend is a Redis the tests can open clients on: a fresh miniredis, or
// the real Redis named by SLUICE_REDIS_URL under a random prefix whose keys
// are deleted when the test ends.
type backend struct {
	opts   *redis.Options
	prefix keyspace.Prefix
	mini   *miniredis.Miniredis
}

func miniBackend(t testing.TB) backend {
	t.Helper()
	m := miniredis.RunT(t)
	return backend{opts: &redis.Options{Addr: m.Addr()}, prefix: keyspace.DefaultPrefix, mini: m}
}

func realBackend(t testing.TB) backend {
	t.Helper()
	opts, prefix, ok := redistest.Real(t)
	if !ok {
		t.Skip("SLUICE_REDIS_URL not set: skipping the real-Redis run")
	}
	return backend{opts: opts, prefix: prefix}
}

// client opens a new client (a new connection pool: another "process").
func (b backend) client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(b.opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// store opens a store on a new client; opts.Prefix defaults to the
// backend's prefix.
func (b backend) store(t testing.TB, opts redislimit.Options) *redislimit.Store {
	t.Helper()
	if opts.Prefix == "" {
		opts.Prefix = b.prefix
	}
	s, err := redislimit.New(b.client(t), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func fakeClock() *clock.Fake { return clock.NewFake(epoch) }
