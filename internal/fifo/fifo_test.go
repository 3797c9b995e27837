package fifo

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"
)

// granted reports whether t has been granted its place, taking the grant.
func granted(t <-chan struct{}) bool {
	select {
	case <-t:
		return true
	default:
		return false
	}
}

func (s *Semaphore) waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.wait)
}

// idle reports whether every place is free and nobody waits.
func (s *Semaphore) idle(n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.free == n && len(s.wait) == 0
}

func TestEnterGrantsInOrder(t *testing.T) {
	s := New(1)
	a, b, c := s.Enter(), s.Enter(), s.Enter()
	if got := []bool{granted(a), granted(b), granted(c)}; !got[0] || got[1] || got[2] {
		t.Fatalf("grants with one place: got %v, want [true false false]", got)
	}
	s.Leave(b) // b withdraws while it waits: c is next
	s.Release()
	if granted(b) || !granted(c) {
		t.Fatal("after a release: want c granted, b not")
	}
	d := s.Enter()
	s.Release()
	if !granted(d) {
		t.Fatal("the next release: want d granted")
	}
}

// A waiter that leaves after its grant arrived passes the place on.
func TestLeaveAfterGrant(t *testing.T) {
	s := New(1)
	a := s.Enter()
	b := s.Enter()
	s.Release() // a's place, held since Enter, goes to b
	if !granted(a) {
		t.Fatal("a: want its first grant")
	}
	s.Leave(b) // b was granted but will not run
	c := s.Enter()
	if !granted(c) {
		t.Fatal("c: want the place b gave up")
	}
	if e := s.Enter(); granted(e) {
		t.Fatal("e: granted a place that is taken")
	}
}

func TestEnterGrantsFreePlacesAtOnce(t *testing.T) {
	s := New(3)
	var got []bool
	for range 4 {
		got = append(got, granted(s.Enter()))
	}
	if want := []bool{true, true, true, false}; !slices.Equal(got, want) {
		t.Fatalf("grants with three places: got %v, want %v", got, want)
	}
}

// acquireQueued starts a goroutine that acquires s and reports its id on
// got, returning once it waits in line.
func acquireQueued(t *testing.T, s *Semaphore, ctx context.Context, id int, got chan<- int, errs chan<- error) {
	t.Helper()
	before := s.waiting()
	go func() {
		if err := s.Acquire(ctx); err != nil {
			errs <- err
			return
		}
		got <- id
	}()
	for s.waiting() == before {
		runtime.Gosched() // not in line yet; Acquire is a few instructions away
	}
}

func TestAcquireIsFIFO(t *testing.T) {
	t.Parallel()
	s := New(1)
	if err := s.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, errs := make(chan int, 10), make(chan error, 10)
	for i := range 10 {
		acquireQueued(t, s, context.Background(), i, got, errs)
	}
	for want := range 10 {
		s.Release()
		if id := <-got; id != want {
			t.Fatalf("turn %d went to %d", want, id)
		}
	}
	s.Release()
	if !s.idle(1) {
		t.Fatal("semaphore not idle after every waiter left")
	}
}

func TestCancelledAcquireLeavesTheLine(t *testing.T) {
	t.Parallel()
	s := New(1)
	_ = s.Acquire(context.Background())
	got, errs := make(chan int, 3), make(chan error, 3)
	ctx, cancel := context.WithCancel(context.Background())
	acquireQueued(t, s, context.Background(), 0, got, errs)
	acquireQueued(t, s, ctx, 1, got, errs)
	acquireQueued(t, s, context.Background(), 2, got, errs)
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: got %v, want context.Canceled", err)
	}
	for _, want := range []int{0, 2} {
		s.Release()
		if id := <-got; id != want {
			t.Fatalf("turn went to %d, want %d", id, want)
		}
	}
	s.Release()
	if !s.idle(1) {
		t.Fatal("semaphore not idle after every waiter left")
	}
}
