package queuetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// binaryError is an attempt's error as subprocess output makes it: NUL,
// a control character and a byte that is not UTF-8.
const binaryError = "exit status 1: \x00\x01 binary \xff end"

// storedBinaryError is binaryError as every store records it.
const storedBinaryError = "exit status 1: \uFFFD\x01 binary \uFFFD end"

// testText holds every store to the queue's rule for text: an attempt's
// error is recorded storable (queue.StorableError), the same on every
// store, whoever fails the attempt; an identifier with NUL or invalid
// UTF-8 is refused; a token that cannot exist is a lost lease, and leaves
// the lease to its holder.
func testText(t *testing.T, f Factory) {
	runTests(t, f, []test{
		{"FailError", nil, testTextFail},
		{"WorkerError", nil, testTextWorker},
		{"Tokens", nil, testTextTokens},
		{"Identifiers", nil, testTextIdentifiers},
	})
}

func testTextFail(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	j := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", MaxAttempts: 1})
	l := h.leaseOne(t, QueueQ)
	st, err := h.Backend.Fail(context.Background(), l.Job.ID, l.Token, backend.Failure{Error: binaryError})
	if err != nil || st != queue.StateFailed {
		t.Fatalf("Fail = %s, %v; want failed", st, err)
	}
	got := h.wantState(t, j.ID, queue.StateFailed)
	if got.LastError != storedBinaryError || len(got.Errors) != 1 || got.Errors[0].Error != storedBinaryError {
		t.Errorf("LastError %q, Errors %+v; want %q once", got.LastError, got.Errors, storedBinaryError)
	}
}

func testTextWorker(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	w := queue.NewWorker(h.Backend, workerConfig(QueueQ))
	w.Handle("k", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		return nil, errors.New(binaryError)
	}))
	j := h.enqueue(t, queue.JobSpec{Queue: QueueQ, Kind: "k", MaxAttempts: 2})
	testutil.Start(t, w)
	got := h.waitState(t, j.ID, queue.StateFailed)
	if got.Attempt != 2 || got.Stalls != 0 || got.LastError != storedBinaryError {
		t.Errorf("attempt %d, stalls %d, LastError %q; want 2, 0, %q", got.Attempt, got.Stalls, got.LastError, storedBinaryError)
	}
}

func testTextTokens(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	ctx := context.Background()
	j := h.enqueue(t, spec(QueueQ, "k"))
	l := h.leaseOne(t, QueueQ)
	for _, bad := range []string{l.Token + "\x00", "\x00", l.Token[:1] + "\xff"} {
		_, err := h.Backend.Extend(ctx, l.Job.ID, bad, time.Minute)
		wantErr(t, "Extend with token "+bad, err, queue.ErrLeaseLost)
		err = h.Backend.Complete(ctx, l.Job.ID, bad, nil)
		wantErr(t, "Complete with token "+bad, err, queue.ErrLeaseLost)
		_, err = h.Backend.Fail(ctx, l.Job.ID, bad, backend.Failure{Error: "e"})
		wantErr(t, "Fail with token "+bad, err, queue.ErrLeaseLost)
		_, err = h.Backend.Requeue(ctx, l.Job.ID, bad)
		wantErr(t, "Requeue with token "+bad, err, queue.ErrLeaseLost)
	}
	if err := h.Backend.Complete(ctx, l.Job.ID, l.Token, nil); err != nil {
		t.Fatalf("Complete with the lease's token: %v", err)
	}
	h.wantState(t, j.ID, queue.StateCompleted)
}

func testTextIdentifiers(t *testing.T, f Factory) {
	t.Parallel()
	h := NewHarness(t, f)
	cases := []struct {
		name  string
		spec  queue.JobSpec
		field string
	}{
		{"unique key NUL", queue.JobSpec{Queue: QueueQ, Kind: "k", UniqueKey: "a\x00b"}, "JobSpec.UniqueKey"},
		{"unique key not UTF-8", queue.JobSpec{Queue: QueueQ, Kind: "k", UniqueKey: "a\xffb"}, "JobSpec.UniqueKey"},
		{"queue not UTF-8", queue.JobSpec{Queue: "q\xff", Kind: "k"}, "JobSpec.Queue"},
		{"kind NUL", queue.JobSpec{Queue: QueueQ, Kind: "k\x00"}, "JobSpec.Kind"},
	}
	for _, c := range cases {
		_, err := h.Client.Enqueue(context.Background(), c.spec)
		var ia *queue.InvalidArgumentError
		if !errors.As(err, &ia) || ia.Field != c.field {
			t.Errorf("%s: error = %v, want an invalid %s", c.name, err, c.field)
		}
	}
	if got := h.lease(t, 10, QueueQ); len(got) != 0 {
		t.Errorf("leased %d jobs after the refusals, want none", len(got))
	}
}
