package amqpqueue

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
)

// deadLetters takes every message from lane queue q's dead-letter queue.
func deadLetters(t *testing.T, b *Backend, q string) []amqp.Delivery {
	t.Helper()
	ch := adminChannel(t)
	var out []amqp.Delivery
	for {
		d, ok, err := ch.Get(b.deadName(q), true)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, d)
	}
}

// TestPoisonRedeliveries: a job whose workers keep dying without
// acknowledging it goes to the dead-letter queue with the reason, instead
// of killing workers forever.
func TestPoisonRedeliveries(t *testing.T) {
	t.Parallel()
	const max = 2
	b := open(t, Options{MaxRedeliveries: max, LeaseWait: 2 * time.Second})
	j, err := queue.NewClient(b).Enqueue(bg(), queue.JobSpec{Queue: "p", Kind: "k", Payload: []byte("poison")})
	if err != nil {
		t.Fatal(err)
	}
	// Each round, a worker takes the job and dies (its connection closes
	// without an acknowledgement).
	for round := 0; round <= max; round++ {
		w := open(t, Options{Prefix: b.opts.Prefix, MaxRedeliveries: max, LeaseWait: 2 * time.Second})
		ls := leaseN(t, w, 1, "p")
		if len(ls) != 1 || ls[0].Job.ID != j.ID || ls[0].Job.Stalls != round {
			t.Fatalf("round %d: leased %+v, want the job with %d stalls", round, ls, round)
		}
		w.Close()
	}
	if ls := leaseN(t, b, 1, "p"); len(ls) != 0 {
		t.Fatalf("the poison job was leased again after %d redeliveries", max+1)
	}
	dead := deadLetters(t, b, "p")
	if len(dead) != 1 || dead[0].MessageId != j.ID || string(dead[0].Body) != "poison" {
		t.Fatalf("dead letters = %d messages, want the poison job", len(dead))
	}
	reason := str(dead[0].Headers[hReason])
	if !strings.Contains(reason, "redelivered 3 times") || str(dead[0].Headers[hQueue]) != "p" {
		t.Fatalf("dead letter reason %q queue %q", reason, dead[0].Headers[hQueue])
	}
	got, err := b.Get(bg(), j.ID)
	if err != nil || got.State != queue.StateFailed || got.LastError != reason {
		t.Fatalf("Get = %+v, %v; want failed with the reason", got, err)
	}
}

// TestFailuresDeadLetter: a job that fails its last attempt, or fails
// permanently, ends failed and in the dead-letter queue with its error.
func TestFailuresDeadLetter(t *testing.T) {
	t.Parallel()
	b := open(t, Options{})
	c := queue.NewClient(b)
	flaky, err := c.Enqueue(bg(), queue.JobSpec{Queue: "f", Kind: "flaky", MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	perm, err := c.Enqueue(bg(), queue.JobSpec{Queue: "f", Kind: "bad", MaxAttempts: 5})
	if err != nil {
		t.Fatal(err)
	}
	w := queue.NewWorker(b, queue.WorkerConfig{
		Queues: []string{"f"}, Logger: quiet, PollInterval: 10 * time.Millisecond,
		Backoff: func(int, error) time.Duration { return 0 },
	})
	w.Handle("flaky", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		return nil, errors.New("boom")
	}))
	w.Handle("bad", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		return nil, queue.Permanent(errors.New("bad input"))
	}))
	stop := testutil.Start(t, w)
	for _, id := range []string{flaky.ID, perm.ID} {
		waitState(t, b, id, queue.StateFailed)
	}
	stop()
	if j, _ := b.Get(bg(), flaky.ID); j.Attempt != 2 || len(j.Errors) != 2 || j.LastError != "boom" {
		t.Errorf("flaky job: attempt %d errors %v", j.Attempt, j.Errors)
	}
	if j, _ := b.Get(bg(), perm.ID); j.Attempt != 1 || j.LastError != "bad input" {
		t.Errorf("permanent job: attempt %d last error %q", j.Attempt, j.LastError)
	}
	dead := deadLetters(t, b, "f")
	reasons := map[string]string{}
	for _, d := range dead {
		reasons[d.MessageId] = str(d.Headers[hReason])
	}
	if len(dead) != 2 || reasons[flaky.ID] != "boom" || reasons[perm.ID] != "bad input" {
		t.Fatalf("dead letters = %v, want both jobs with their errors", reasons)
	}
}
