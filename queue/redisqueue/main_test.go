package redisqueue_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// TestMain keeps go-redis's log of the dials that outage tests refuse on
// purpose out of a passing run's output (redistest.HoldLogs).
func TestMain(m *testing.M) {
	queuetest.CrashWorkerMain(openDSN) // returns at once unless this is a TestCrash worker
	goleak.VerifyTestMain(m, goleak.Cleanup(redistest.HoldLogs()))
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// server is a Redis the tests open clients on: a fresh miniredis, or the
// real Redis named by SLUICE_REDIS_URL under a random prefix whose keys
// are deleted when the test ends.
type server struct {
	opts   *redis.Options
	prefix keyspace.Prefix
	mini   *miniredis.Miniredis
}

func miniServer(t testing.TB) server {
	t.Helper()
	m := miniredis.RunT(t)
	return server{opts: testClientOptions(&redis.Options{Addr: m.Addr()}), prefix: randomPrefix(), mini: m}
}

func realServer(t testing.TB) server {
	t.Helper()
	url := os.Getenv("SLUICE_REDIS_URL")
	if url == "" {
		t.Skip("SLUICE_REDIS_URL not set: skipping the real-Redis run")
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("SLUICE_REDIS_URL: %v", err)
	}
	s := server{opts: testClientOptions(opts), prefix: randomPrefix()}
	t.Cleanup(func() { s.cleanup(t) })
	return s
}

// testClientOptions gives the tests' clients a read timeout a loaded test
// machine cannot reach and no retries: go-redis retries a command whose
// reply timed out, and a retried enqueue script would store its jobs twice.
func testClientOptions(o *redis.Options) *redis.Options {
	o.ReadTimeout = 30 * time.Second
	o.MaxRetries = -1
	return o
}

func randomPrefix() keyspace.Prefix {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return keyspace.Prefix("sluicetest-" + hex.EncodeToString(b) + ":")
}

func (s server) cleanup(t testing.TB) {
	c := redis.NewClient(s.opts)
	defer c.Close()
	ctx := context.Background()
	iter := c.Scan(ctx, 0, string(s.prefix)+"*", 1000).Iterator()
	pipe := c.Pipeline()
	for iter.Next(ctx) {
		pipe.Unlink(ctx, iter.Val())
		if pipe.Len() == 1000 {
			_, _ = pipe.Exec(ctx)
		}
	}
	_, _ = pipe.Exec(ctx)
	if err := iter.Err(); err != nil {
		t.Errorf("cleaning up %s*: %v", s.prefix, err)
	}
}

// client opens a new client (its own connection pool).
func (s server) client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(s.opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// clusterClient opens a Redis Cluster client on a miniredis, which
// answers CLUSTER SLOTS as a one-node cluster.
func (s server) clusterClient(t testing.TB) *redis.ClusterClient {
	t.Helper()
	if s.mini == nil {
		t.Skip("the Cluster client runs on miniredis only")
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{s.opts.Addr}})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// backend opens a Backend on a new client; opts.Prefix defaults to the
// server's prefix and opts.Logger to a quiet one.
func (s server) backend(t testing.TB, opts redisqueue.Options) *redisqueue.Backend {
	t.Helper()
	return s.backendOn(t, s.client(t), opts)
}

// backendOn opens a Backend on client c.
func (s server) backendOn(t testing.TB, c redis.UniversalClient, opts redisqueue.Options) *redisqueue.Backend {
	t.Helper()
	if opts.Prefix == "" {
		opts.Prefix = s.prefix
	}
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	b, err := redisqueue.New(c, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// servers are the Redis servers every backend test runs on.
var servers = []struct {
	name string
	open func(testing.TB) server
}{
	{"miniredis", miniServer},
	{"redis", realServer},
}

func withClock(clk clock.Clock) redisqueue.Options { return redisqueue.Options{Clock: clk} }
