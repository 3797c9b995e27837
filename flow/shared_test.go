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
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

func memStore(t *testing.T, fc *clock.Fake) *memlimit.Store {
	t.Helper()
	s := memlimit.New(memlimit.Options{Clock: fc, SweepInterval: -1})
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func sharedBudget(t *testing.T, store ratelimit.Store, fc *clock.Fake, name string, calls int, per time.Duration) *flow.SharedBudget {
	t.Helper()
	b, err := flow.NewSharedBudget(store, name, calls, per, flow.WithClock(fc))
	if err != nil {
		t.Fatalf("NewSharedBudget: %v", err)
	}
	return b
}

func TestNewSharedBudgetRejectsBadArguments(t *testing.T) {
	t.Parallel()
	store := memStore(t, clock.NewFake(epoch))
	tests := []struct {
		store ratelimit.Store
		name  string
		calls int
		per   time.Duration
		field string
	}{
		{nil, "api", 10, time.Second, "store"},
		{store, "", 10, time.Second, "name"},
		{store, "api", 0, time.Second, "calls"},
		{store, "api", 10, 0, "per"},
		{store, "api", 10, 1500 * time.Microsecond, "Window"},
	}
	for _, tt := range tests {
		_, err := flow.NewSharedBudget(tt.store, tt.name, tt.calls, tt.per)
		if !errors.Is(err, flow.ErrInvalidArgument) || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("NewSharedBudget(%q, %d, %s) = %v, want ErrInvalidArgument naming %s", tt.name, tt.calls, tt.per, err, tt.field)
		}
	}
}

func TestSharedBudgetBasics(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(epoch)
	b := sharedBudget(t, memStore(t, fc), fc, "search api", 3, 3*time.Second)
	if got, want := b.Key(), "flow:budget:{search%20api}"; got != want {
		t.Errorf("Key() = %q, want %q", got, want)
	}
	if err := b.Wait(context.Background(), 4); !errors.Is(err, flow.ErrOverCapacity) {
		t.Errorf("Wait(4) on capacity 3 = %v, want ErrOverCapacity", err)
	}
	if !b.TryTake(3) || b.TryTake(1) || !b.TryTake(0) {
		t.Fatal("a fresh shared budget of 3 must give 3 calls, then none")
	}
	if err := b.Wait(context.Background(), 0); err != nil {
		t.Errorf("Wait(0) = %v, want nil", err)
	}
	hourly := sharedBudget(t, memStore(t, fc), fc, "report api", 1, time.Hour)
	hourly.TryTake(1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := hourly.Wait(ctx, 1); !errors.Is(err, flow.ErrWouldExceedDeadline) {
		t.Fatalf("Wait needing 1h with 1m left = %v, want ErrWouldExceedDeadline", err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Wait(context.Background(), 2) }()
	fc.BlockUntil(1)
	fc.Advance(2 * time.Second)
	if b.TryTake(1) {
		t.Fatal("TryTake took a call a waiter was waiting for")
	}
	if err := <-done; err != nil {
		t.Fatalf("Wait(2) after refill = %v", err)
	}
}

type faultyStore struct{}

func (faultyStore) Consume(context.Context, ...ratelimit.Request) (ratelimit.Decision, error) {
	return ratelimit.Decision{}, &ratelimit.StoreError{Op: "consume", Err: errors.New("connection refused")}
}

func TestSharedBudgetReturnsStoreFaults(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(epoch)
	b := sharedBudget(t, faultyStore{}, fc, "api", 10, time.Second)
	err := b.Wait(context.Background(), 1)
	if !errors.Is(err, ratelimit.ErrStoreUnavailable) || !strings.Contains(err.Error(), `shared budget "api"`) {
		t.Fatalf("Wait on a failing store = %v, want ErrStoreUnavailable naming the budget", err)
	}
	if b.TryTake(1) {
		t.Fatal("TryTake on a failing store = true")
	}
	if ok, err := b.Take(context.Background(), 1); ok || !errors.Is(err, ratelimit.ErrStoreUnavailable) {
		t.Fatalf("Take on a failing store = %v, %v; want false, ErrStoreUnavailable", ok, err)
	}
}

// testFleet checks the fleet-wide promise on two budgets that share a name
// through their stores: together they never admit more than the budget.
// a and b must be backed by different clients or store instances.
func testFleet(t *testing.T, fc *clock.Fake, a, b *flow.SharedBudget) {
	t.Helper()
	const calls = 10 // per second, as built by the caller
	clients := []*flow.SharedBudget{a, b}

	// With time frozen, 40 callers on two clients share the 10 calls.
	var took atomic.Int64
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := clients[i%2].Take(context.Background(), 1)
			if err != nil {
				t.Errorf("Take: %v", err)
			}
			if ok {
				took.Add(1)
			}
		}()
	}
	wg.Wait()
	if took.Load() != calls {
		t.Fatalf("two clients took %d calls at once from a budget of %d", took.Load(), calls)
	}

	// Then 30 waiters: never more than 10 per second between them.
	start := fc.Now()
	var done atomic.Int64
	all := make(chan struct{})
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := clients[i%2].Wait(context.Background(), 1); err != nil {
				t.Errorf("Wait: %v", err)
			}
			done.Add(1)
		}()
	}
	go func() { wg.Wait(); close(all) }()
	for finished := false; !finished; {
		w := waiting(fc)
		select {
		case <-all:
			tm := fc.NewTimer(time.Hour)
			<-w
			tm.Stop()
			finished = true
		case <-w:
			fc.Advance(50 * time.Millisecond)
		}
		elapsed := fc.Now().Sub(start)
		if allowed := int64(elapsed / (time.Second / calls)); done.Load() > allowed {
			t.Fatalf("%d waits done %s after the budget ran dry; at most %d allowed", done.Load(), elapsed, allowed)
		}
	}
	if elapsed := fc.Now().Sub(start); elapsed < 3*time.Second {
		t.Fatalf("30 calls at 10 per second took %s, want at least 3s", elapsed)
	}
}

func TestSharedBudgetAcrossStoresInProcess(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(epoch)
	store := memStore(t, fc)
	testFleet(t, fc,
		sharedBudget(t, store, fc, "search", 10, time.Second),
		sharedBudget(t, store, fc, "search", 10, time.Second))
}

func TestSharedBudgetsWithDifferentNamesAreIndependent(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(epoch)
	store := memStore(t, fc)
	a := sharedBudget(t, store, fc, "search", 1, time.Hour)
	b := sharedBudget(t, store, fc, "webhooks", 1, time.Hour)
	if !a.TryTake(1) || !b.TryTake(1) || a.TryTake(1) {
		t.Fatal("budgets with different names must count separately")
	}
}
