package amqpqueue

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
)

// rabbitmqctl runs the broker's admin tool, skipping the test when it is
// not installed here.
func rabbitmqctl(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("rabbitmqctl"); err != nil {
		t.Skip("rabbitmqctl is not installed: skipping a test that drives the broker")
	}
	out, err := exec.Command("rabbitmqctl", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("rabbitmqctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// adminChannel opens a channel on a connection of its own.
func adminChannel(t *testing.T) *amqp.Channel {
	t.Helper()
	conn, err := amqp.Dial(brokerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// TestConfirms: Enqueue returns once the broker holds the job.
func TestConfirms(t *testing.T) {
	t.Parallel()
	b := open(t, Options{})
	c := queue.NewClient(b)
	specs := make([]queue.JobSpec, 50)
	for i := range specs {
		specs[i] = queue.JobSpec{Queue: "c", Kind: "k"}
	}
	if _, err := c.EnqueueBatch(bg(), specs); err != nil {
		t.Fatal(err)
	}
	// No consumer runs: every confirmed job is in the queue right now.
	if n, err := b.topo.inspect(bg(), b.mainName("c")); err != nil || n != len(specs) {
		t.Fatalf("queue holds %d, %v; want %d right after Enqueue returned", n, err, len(specs))
	}
}

// TestUnroutable: a job the broker cannot route (its queue was deleted
// behind the backend's back) is an error, and the next Enqueue declares
// the queue again.
func TestUnroutable(t *testing.T) {
	t.Parallel()
	b := open(t, Options{})
	c := queue.NewClient(b)
	if _, err := c.Enqueue(bg(), queue.JobSpec{Queue: "u", Kind: "k"}); err != nil {
		t.Fatal(err)
	}
	if _, err := adminChannel(t).QueueDelete(b.mainName("u"), false, false, false); err != nil {
		t.Fatal(err)
	}
	_, err := c.Enqueue(bg(), queue.JobSpec{Queue: "u", Kind: "k"})
	if err == nil || !strings.Contains(err.Error(), "unroutable") {
		t.Fatalf("Enqueue to a deleted queue = %v, want an unroutable error", err)
	}
	if _, err := c.Enqueue(bg(), queue.JobSpec{Queue: "u", Kind: "k"}); err != nil {
		t.Fatalf("Enqueue after the queue was declared again: %v", err)
	}
	if n, _ := b.topo.inspect(bg(), b.mainName("u")); n != 1 {
		t.Fatalf("queue holds %d, want 1", n)
	}
}

// TestNack: a job the broker refuses (here: a policy caps the queue at one
// message and rejects further publishes) is an error.
func TestNack(t *testing.T) {
	t.Parallel()
	b := open(t, Options{})
	c := queue.NewClient(b)
	if _, err := c.Enqueue(bg(), queue.JobSpec{Queue: "n", Kind: "k"}); err != nil {
		t.Fatal(err)
	}
	policy := "sluicetest-" + strings.Trim(b.opts.Prefix, ".")
	rabbitmqctl(t, "set_policy", "--apply-to", "queues", policy, "^"+regexp.QuoteMeta(b.mainName("n"))+"$",
		`{"max-length":1,"overflow":"reject-publish"}`)
	t.Cleanup(func() { rabbitmqctl(t, "clear_policy", policy) })
	// The policy reaches the queue shortly after set_policy returns.
	var err error
	testutil.Eventually(t, "Enqueue into a full reject-publish queue to fail", func() bool {
		_, err = c.Enqueue(bg(), queue.JobSpec{Queue: "n", Kind: "k"})
		return err != nil
	})
	if !strings.Contains(err.Error(), "refused (nack)") {
		t.Fatalf("Enqueue error = %v, want the broker's nack", err)
	}
}
