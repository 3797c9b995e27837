package amqpqueue

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
)

// closeConnections closes, from the broker's side, every connection whose
// name contains match, and returns how many it closed.
func closeConnections(t *testing.T, match string) int {
	t.Helper()
	out := rabbitmqctl(t, "list_connections", "-q", "--no-table-headers", "pid", "client_properties")
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, match) {
			continue
		}
		pid, _, _ := strings.Cut(line, "\t")
		rabbitmqctl(t, "close_connection", strings.TrimSpace(pid), "sluice test: closed from the server side")
		n++
	}
	return n
}

// lossTest runs producers and a worker through fault, and checks that
// both keep going and that every job the broker confirmed runs.
type lossTest struct {
	t *testing.T
	b *Backend

	mu        sync.Mutex
	confirmed map[string]bool
	ran       map[string]int
	failed    int
}

func newLossTest(t *testing.T) *lossTest {
	lt := &lossTest{t: t, confirmed: map[string]bool{}, ran: map[string]int{}}
	lt.b = open(t, Options{Prefetch: 50, ReconnectMin: 20 * time.Millisecond, ReconnectMax: 500 * time.Millisecond})
	w := queue.NewWorker(lt.b, queue.WorkerConfig{Queues: []string{"r"}, Concurrency: 8, Logger: quiet, PollInterval: 10 * time.Millisecond})
	w.Handle("k", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		lt.mu.Lock()
		defer lt.mu.Unlock()
		lt.ran[j.ID]++
		return nil, nil
	}))
	testutil.Start(t, w)
	return lt
}

// produce enqueues jobs one at a time until ctx ends; an Enqueue that
// fails (its outcome unknown) is counted, not fatal.
func (lt *lossTest) produce(ctx context.Context) {
	c := queue.NewClient(lt.b)
	for ctx.Err() == nil {
		j, err := c.Enqueue(ctx, queue.JobSpec{Queue: "r", Kind: "k"})
		lt.mu.Lock()
		if err == nil {
			lt.confirmed[j.ID] = true
		} else if ctx.Err() == nil {
			lt.failed++
		}
		lt.mu.Unlock()
	}
}

func (lt *lossTest) nConfirmed() int {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return len(lt.confirmed)
}

// waitConfirmed waits until n more jobs are confirmed.
func (lt *lossTest) waitConfirmed(n int) {
	lt.t.Helper()
	want := lt.nConfirmed() + n
	testutil.Eventually(lt.t, fmt.Sprintf("producers to confirm %d jobs", want), func() error {
		if got := lt.nConfirmed(); got < want {
			return fmt.Errorf("they confirmed %d", got)
		}
		return nil
	})
}

// run drives producers through the faults and checks the outcome.
func (lt *lossTest) run(faults ...func()) {
	t := lt.t
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); lt.produce(ctx) }()
	}
	lt.waitConfirmed(200)
	for _, fault := range faults {
		fault()
		lt.waitConfirmed(200) // producers and the worker keep going
	}
	cancel()
	wg.Wait()
	missing := func() (n int) {
		lt.mu.Lock()
		defer lt.mu.Unlock()
		for id := range lt.confirmed {
			if lt.ran[id] == 0 {
				n++
			}
		}
		return n
	}
	testutil.Eventually(t, "every confirmed job to run", func() error {
		if n := missing(); n > 0 {
			return fmt.Errorf("%d of %d have not run", n, lt.nConfirmed())
		}
		return nil
	})
	lt.mu.Lock()
	defer lt.mu.Unlock()
	twice := 0
	for _, n := range lt.ran {
		if n > 1 {
			twice++
		}
	}
	t.Logf("%d jobs confirmed, all ran (%d more than once, as at-least-once allows); %d enqueues failed during the faults",
		len(lt.confirmed), twice, lt.failed)
}

// TestReconnect closes the backend's connections from the broker's side
// twice while producers and a worker run: both heal and no confirmed job
// is lost.
func TestReconnect(t *testing.T) {
	lt := newLossTest(t)
	closeAll := func() {
		if n := closeConnections(t, lt.b.opts.Prefix); n != 2 {
			t.Fatalf("closed %d connections, want 2 (publish and consume)", n)
		}
	}
	lt.run(closeAll, closeAll)
}

// restartEnv enables TestBrokerRestart, which stops and starts the
// RabbitMQ application on the (shared) local broker.
const restartEnv = "SLUICE_AMQP_RESTART"

// TestBrokerRestart stops and starts the broker (its RabbitMQ application)
// in the middle of a run: no confirmed job is lost. It restarts the broker
// once, only when SLUICE_AMQP_RESTART=1, and leaves it running.
func TestBrokerRestart(t *testing.T) {
	brokerURL(t)
	if os.Getenv(restartEnv) != "1" {
		t.Skipf("%s is not 1: not restarting the shared broker", restartEnv)
	}
	lt := newLossTest(t)
	t.Cleanup(func() {
		rabbitmqctl(t, "start_app")
		rabbitmqctl(t, "await_startup")
	})
	lt.run(func() {
		rabbitmqctl(t, "stop_app")
		rabbitmqctl(t, "start_app")
		rabbitmqctl(t, "await_startup")
	})
}
