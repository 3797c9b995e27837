// Package fifo holds a counting semaphore that grants its places strictly
// in the order they were asked for. sync.Mutex makes no ordering promise,
// and a channel's is an implementation detail, so the line is explicit.
//
// A shared call budget lets its callers through one at a time in arrival
// order, and a worker with a Prefetch hands its handler slots to the jobs
// it holds in lease order: both are this semaphore.
package fifo

import (
	"context"
	"slices"
	"sync"
)

// Semaphore hands out a fixed number of places, first come first served.
type Semaphore struct {
	mu   sync.Mutex
	free int
	wait []chan struct{}
}

// New returns a Semaphore of n places, all free.
func New(n int) *Semaphore { return &Semaphore{free: n} }

// Enter joins the line without blocking; the returned channel receives
// once the caller's place is granted (at once when one is free and nobody
// waits). A caller that will not take its place must Leave with it.
func (s *Semaphore) Enter() <-chan struct{} {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.free > 0 && len(s.wait) == 0 {
		s.free--
		ch <- struct{}{}
	} else {
		s.wait = append(s.wait, ch)
	}
	return ch
}

// Acquire blocks until the caller's place is granted and returns nil; the
// caller must then Release. If ctx ends first, it returns ctx's error and
// holds no place.
func (s *Semaphore) Acquire(ctx context.Context) error {
	t := s.Enter()
	select {
	case <-t:
		return nil
	case <-ctx.Done():
		s.Leave(t)
		return ctx.Err()
	}
}

// Release frees a granted place: the longest waiter gets it.
func (s *Semaphore) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.wait) > 0 {
		ch := s.wait[0]
		s.wait[0] = nil
		s.wait = s.wait[1:]
		ch <- struct{}{}
		return
	}
	s.free++
}

// Leave withdraws t, from Enter, whose grant has not been received: out
// of the line if it still waits, or, when its place was granted meanwhile,
// passing the place on.
func (s *Semaphore) Leave(t <-chan struct{}) {
	s.mu.Lock()
	if i := slices.IndexFunc(s.wait, func(c chan struct{}) bool { return c == t }); i >= 0 {
		s.wait = slices.Delete(s.wait, i, i+1)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	<-t
	s.Release()
}
