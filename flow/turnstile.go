package flow

import (
	"context"
	"sync"
)

// turnstile lets one goroutine through at a time, strictly in arrival
// order. sync.Mutex makes no ordering promise and a channel's is an
// implementation detail, so the queue is explicit.
type turnstile struct {
	mu    sync.Mutex
	busy  bool
	queue []chan struct{}
}

// enter blocks until it is the caller's turn or ctx ends. On success the
// caller must call leave.
func (t *turnstile) enter(ctx context.Context) error {
	t.mu.Lock()
	if !t.busy {
		t.busy = true
		t.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	t.queue = append(t.queue, ch)
	t.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return t.abandon(ch, ctx.Err())
	}
}

// abandon takes ch out of the queue after its context ended. If the turn
// was handed over meanwhile, it passes the turn on instead.
func (t *turnstile) abandon(ch chan struct{}, err error) error {
	t.mu.Lock()
	select {
	case <-ch:
		t.mu.Unlock()
		t.leave()
		return err
	default:
	}
	for i, c := range t.queue {
		if c == ch {
			t.queue = append(t.queue[:i], t.queue[i+1:]...)
			break
		}
	}
	t.mu.Unlock()
	return err
}

// leave hands the turn to the longest waiter, or frees it.
func (t *turnstile) leave() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.queue) == 0 {
		t.busy = false
		return
	}
	next := t.queue[0]
	t.queue[0] = nil
	t.queue = t.queue[1:]
	close(next)
}
