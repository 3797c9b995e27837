package flow_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/flow"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newBudget(t *testing.T, calls int, per time.Duration) (*flow.Budget, *clock.Fake) {
	t.Helper()
	fc := clock.NewFake(epoch)
	b, err := flow.NewBudget(calls, per, flow.WithClock(fc))
	if err != nil {
		t.Fatalf("NewBudget(%d, %s): %v", calls, per, err)
	}
	return b, fc
}

func TestNewBudgetRejectsBadArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		calls int
		per   time.Duration
		field string
	}{
		{0, time.Second, "calls"},
		{-1, time.Second, "calls"},
		{10, 0, "per"},
		{10, -time.Second, "per"},
	}
	for _, tt := range tests {
		_, err := flow.NewBudget(tt.calls, tt.per)
		if !errors.Is(err, flow.ErrInvalidArgument) {
			t.Errorf("NewBudget(%d, %s) error = %v, want ErrInvalidArgument", tt.calls, tt.per, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.field) {
			t.Errorf("NewBudget(%d, %s) error %q does not name %q", tt.calls, tt.per, err, tt.field)
		}
	}
}

func TestBudgetCapacityAndRefill(t *testing.T) {
	t.Parallel()
	b, fc := newBudget(t, 10, time.Second)
	steps := []struct {
		advance time.Duration
		take    int
		want    bool
	}{
		{0, 10, true},                     // starts full
		{0, 1, false},                     // and is now empty
		{100 * time.Millisecond, 1, true}, // 10 per second refills 1 per 100ms
		{0, 1, false},
		{time.Second, 10, true},       // a full period refills it all
		{10 * time.Second, 11, false}, // never more than the capacity
		{0, 10, true},
		{0, 0, true},  // n <= 0 always succeeds
		{0, -3, true}, // even on an empty budget
	}
	for i, s := range steps {
		fc.Advance(s.advance)
		if got := b.TryTake(s.take); got != s.want {
			t.Fatalf("step %d: after +%s TryTake(%d) = %v, want %v", i, s.advance, s.take, got, s.want)
		}
	}
}

func TestBudgetWaitReturnsAtOnceForNothing(t *testing.T) {
	t.Parallel()
	b, _ := newBudget(t, 1, time.Hour)
	b.TryTake(1)
	for _, n := range []int{0, -1} {
		if err := b.Wait(context.Background(), n); err != nil {
			t.Errorf("Wait(%d) on an empty budget = %v, want nil", n, err)
		}
	}
}

func TestBudgetWaitOverCapacity(t *testing.T) {
	t.Parallel()
	b, _ := newBudget(t, 5, time.Second)
	err := b.Wait(context.Background(), 6)
	if !errors.Is(err, flow.ErrOverCapacity) {
		t.Fatalf("Wait(6) on capacity 5 = %v, want ErrOverCapacity", err)
	}
	if !strings.Contains(err.Error(), "n=6") || !strings.Contains(err.Error(), "capacity 5") {
		t.Errorf("error %q should name n and the capacity", err)
	}
	if !b.TryTake(5) {
		t.Error("a refused Wait must not take anything")
	}
}

func TestBudgetWaitRefusesAWaitPastTheDeadline(t *testing.T) {
	t.Parallel()
	b, fc := newBudget(t, 1, time.Hour)
	b.TryTake(1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := b.Wait(ctx, 1)
	if !errors.Is(err, flow.ErrWouldExceedDeadline) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait needing 1h with 1m left = %v, want ErrWouldExceedDeadline and DeadlineExceeded", err)
	}
	if n := fc.Waiters(); n != 0 {
		t.Errorf("a refused wait left %d timers, want 0", n)
	}
	fc.Advance(time.Hour)
	if !b.TryTake(1) {
		t.Error("a refused wait must give its reservation back")
	}
}

func TestBudgetWaitSleepsUntilRefilled(t *testing.T) {
	t.Parallel()
	b, fc := newBudget(t, 2, time.Second)
	b.TryTake(2)
	done := make(chan error, 1)
	go func() { done <- b.Wait(context.Background(), 2) }()
	fc.BlockUntil(1)
	fc.Advance(999 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Wait returned %v before the budget refilled", err)
	default:
	}
	fc.Advance(time.Millisecond)
	if err := <-done; err != nil {
		t.Fatalf("Wait = %v, want nil", err)
	}
}

// TestBudgetServesWaitersInArrivalOrder queues ten waiters on an empty
// budget of one call per second; each second must release exactly the next
// one in arrival order.
func TestBudgetServesWaitersInArrivalOrder(t *testing.T) {
	t.Parallel()
	b, fc := newBudget(t, 1, time.Second)
	b.TryTake(1)
	done := make(chan int, 10)
	for i := range 10 {
		go func() {
			if err := b.Wait(context.Background(), 1); err != nil {
				t.Errorf("waiter %d: %v", i, err)
			}
			done <- i
		}()
		fc.BlockUntil(i + 1) // waiter i is queued before i+1 arrives
	}
	for want := range 10 {
		fc.Advance(time.Second)
		if got := <-done; got != want {
			t.Fatalf("second %d released waiter %d, want %d", want+1, got, want)
		}
	}
}

// TestBudgetSmallWaiterDoesNotOvertake: a waiter for 1 call that arrives
// after a waiter for 3 must not start first, even though one call is
// available sooner.
func TestBudgetSmallWaiterDoesNotOvertake(t *testing.T) {
	t.Parallel()
	b, fc := newBudget(t, 3, 3*time.Second) // 1 call per second
	b.TryTake(3)
	order := make(chan string, 2)
	start := func(name string, n, queued int) {
		go func() {
			if err := b.Wait(context.Background(), n); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			order <- name
		}()
		fc.BlockUntil(queued)
	}
	start("big", 3, 1)
	start("small", 1, 2)
	fc.Advance(3 * time.Second)
	if got := <-order; got != "big" {
		t.Fatalf("first released = %q, want big", got)
	}
	if b.TryTake(1) {
		t.Fatal("TryTake passed a queued waiter")
	}
	fc.Advance(time.Second)
	if got := <-order; got != "small" {
		t.Fatalf("second released = %q, want small", got)
	}
}

func TestBudgetCancelledWaitGivesItsPlaceBack(t *testing.T) {
	t.Parallel()
	b, fc := newBudget(t, 1, time.Second)
	b.TryTake(1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Wait(ctx, 1) }()
	fc.BlockUntil(1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Wait = %v, want context.Canceled", err)
	}
	fc.Advance(time.Second)
	if !b.TryTake(1) {
		t.Fatal("the cancelled waiter's call was not given back")
	}
	if b.TryTake(1) {
		t.Fatal("more than one call after one second")
	}
}

func TestBudgetWaitOnEndedContext(t *testing.T) {
	t.Parallel()
	b, _ := newBudget(t, 1, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Wait(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on an ended context = %v, want context.Canceled", err)
	}
}

func TestBudgetTryTakeIsAtomic(t *testing.T) {
	t.Parallel()
	b, _ := newBudget(t, 20, time.Hour)
	var got atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if b.TryTake(1) {
				got.Add(1)
			}
		}()
	}
	wg.Wait()
	if got.Load() != 20 {
		t.Fatalf("%d of 50 concurrent TryTake(1) succeeded on a budget of 20, want 20", got.Load())
	}
}
