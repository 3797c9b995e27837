package mux_test

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/amqpqueue"
	"github.com/sluicehq/sluice/queue/mux"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openSQLite opens a fresh SQLite backend on clk, closed when t ends.
func openSQLite(t testing.TB, clk clock.Clock, opts sqlitequeue.Options) *sqlitequeue.Backend {
	t.Helper()
	opts.Clock = clk
	b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), opts)
	if err != nil {
		t.Fatalf("sqlitequeue.Open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// newMux builds a router or fails the test.
func newMux(t testing.TB, def queue.Backend, routes ...mux.Route) *mux.Backend {
	t.Helper()
	m, err := mux.New(def, routes...)
	if err != nil {
		t.Fatalf("mux.New: %v", err)
	}
	return m
}

// amqpURL returns the test broker's URL or skips the test.
func amqpURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("SLUICE_AMQP_URL")
	if u == "" {
		t.Skip("SLUICE_AMQP_URL is not set: skipping the tests on the RabbitMQ lane (set it to e.g. amqp://guest:guest@127.0.0.1:5672/)")
	}
	return u
}

// openLane opens a lane with a prefix no other test uses and deletes the
// broker queues of queues when t ends.
func openLane(t testing.TB, clk clock.Clock, queues []string) *amqpqueue.Backend {
	t.Helper()
	u := amqpURL(t)
	var r [6]byte
	_, _ = rand.Read(r[:])
	prefix := "sluicetest.mux." + hex.EncodeToString(r[:]) + "."
	b, err := amqpqueue.New(u, amqpqueue.Options{Prefix: prefix, Clock: clk, LeaseWait: 300 * time.Millisecond, ConnectionName: "sluice-test " + prefix})
	if err != nil {
		t.Fatalf("amqpqueue.New: %v", err)
	}
	t.Cleanup(func() {
		b.Close()
		deleteLaneQueues(t, u, prefix, queues)
	})
	return b
}

// deleteLaneQueues deletes the broker queues a lane with prefix may have
// declared for queues: the main queue, its dead letters and its delay
// buckets. Deleting a queue that does not exist is not an error.
func deleteLaneQueues(t testing.TB, url, prefix string, queues []string) {
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	defer ch.Close()
	for _, q := range queues {
		names := []string{prefix + q, prefix + q + ".dead"}
		for _, d := range amqpqueue.DefaultDelayBuckets {
			names = append(names, prefix+q+".delay."+strconv.FormatInt(d.Milliseconds(), 10)+"ms")
		}
		for _, n := range names {
			if _, err := ch.QueueDelete(n, false, false, false); err != nil {
				t.Errorf("cleanup: delete %s: %v", n, err)
				return
			}
		}
	}
}
