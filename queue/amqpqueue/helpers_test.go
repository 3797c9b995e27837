package amqpqueue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// urlEnv names the broker the tests run against; without it they skip.
const urlEnv = "SLUICE_AMQP_URL"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	goleak.VerifyTestMain(m)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// brokerURL returns the test broker's URL or skips the test.
func brokerURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(urlEnv)
	if u == "" {
		t.Skipf("%s is not set: skipping the RabbitMQ lane tests (set it to e.g. amqp://guest:guest@127.0.0.1:5672/)", urlEnv)
	}
	return u
}

// testPrefix is a broker queue prefix no other test uses.
func testPrefix(t testing.TB) string {
	var r [4]byte
	_, _ = rand.Read(r[:])
	n := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	if len(n) > 40 {
		n = n[len(n)-40:]
	}
	return "sluicetest." + n + "." + hex.EncodeToString(r[:]) + "."
}

// open returns a backend on the test broker with a fresh prefix (unless
// opts names one); its queues are deleted when the test ends.
func open(t testing.TB, opts Options) *Backend {
	t.Helper()
	u := brokerURL(t)
	if opts.Prefix == "" {
		opts.Prefix = testPrefix(t)
	}
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	if opts.ConnectionName == "" {
		opts.ConnectionName = "sluice-test " + opts.Prefix
	}
	b, err := New(u, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		b.Close()
		deleteQueues(t, u, b)
	})
	return b
}

// deleteQueues deletes every broker queue b declared.
func deleteQueues(t testing.TB, url string, b *Backend) {
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
	for _, specs := range b.topo.queues() {
		for _, s := range specs {
			if _, err := ch.QueueDelete(s.name, false, false, false); err != nil {
				t.Errorf("cleanup: delete %s: %v", s.name, err)
				return
			}
		}
	}
}

// waitState waits until b's job id is in state want.
func waitState(t testing.TB, b backend.Backend, id string, want queue.State) {
	t.Helper()
	testutil.Eventually(t, "job "+id+" to be "+string(want), func() error {
		if j, err := b.Get(bg(), id); err != nil || j.State != want {
			return fmt.Errorf("Get = %+v, %v", j, err)
		}
		return nil
	})
}

func bg() context.Context { return context.Background() }
