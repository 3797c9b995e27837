package flow

import (
	"context"
	"errors"
	"runtime"
	"testing"
)

// free reports whether nobody holds the turn or waits for it.
func (t *turnstile) free() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.busy && len(t.queue) == 0
}

func (t *turnstile) waiting() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.queue)
}

// enterQueued starts a goroutine that enters ts and reports its id on got,
// returning once it is queued.
func enterQueued(t *testing.T, ts *turnstile, ctx context.Context, id int, got chan<- int, errs chan<- error) {
	t.Helper()
	before := ts.waiting()
	go func() {
		if err := ts.enter(ctx); err != nil {
			errs <- err
			return
		}
		got <- id
	}()
	for ts.waiting() == before {
		// The goroutine has not queued yet; enter is a few instructions.
		runtime.Gosched()
	}
}

func TestTurnstileIsFIFO(t *testing.T) {
	t.Parallel()
	var ts turnstile
	if err := ts.enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, errs := make(chan int, 10), make(chan error, 10)
	for i := range 10 {
		enterQueued(t, &ts, context.Background(), i, got, errs)
	}
	if ts.free() {
		t.Fatal("a turnstile with ten waiters reads as free")
	}
	for want := range 10 {
		ts.leave()
		if id := <-got; id != want {
			t.Fatalf("turn %d went to %d", want, id)
		}
	}
	ts.leave()
	if !ts.free() {
		t.Fatal("turnstile not free after every waiter left")
	}
}

func TestTurnstileCancelledWaiterLeavesTheQueue(t *testing.T) {
	t.Parallel()
	var ts turnstile
	_ = ts.enter(context.Background())
	got, errs := make(chan int, 3), make(chan error, 3)
	ctx, cancel := context.WithCancel(context.Background())
	enterQueued(t, &ts, context.Background(), 0, got, errs)
	enterQueued(t, &ts, ctx, 1, got, errs)
	enterQueued(t, &ts, context.Background(), 2, got, errs)
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	for _, want := range []int{0, 2} {
		ts.leave()
		if id := <-got; id != want {
			t.Fatalf("turn went to %d, want %d", id, want)
		}
	}
	ts.leave()
	if !ts.free() {
		t.Fatal("turnstile not free after every waiter left")
	}
}
