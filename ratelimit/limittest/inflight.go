package limittest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// acquirer returns the store as a ratelimit.Acquirer, skipping the test
// when it is not one: the capability the in-flight tests need.
func (s *suite) acquirer(t *testing.T) (ratelimit.Acquirer, ratelimit.Acquirer) {
	return storesAs[ratelimit.Acquirer](t, s)
}

// storesAs returns the store and the second instance as T, skipping the
// test when the store is not one (the second falls back to the first).
func storesAs[T any](t *testing.T, s *suite) (T, T) {
	t.Helper()
	a, ok := s.h.Store.(T)
	if !ok {
		t.Skipf("%T is not a %T", s.h.Store, (*T)(nil))
	}
	b, ok := s.second().(T)
	if !ok {
		b = a
	}
	return a, b
}

func acquire(t *testing.T, a ratelimit.Acquirer, r ratelimit.AcquireRequest) ratelimit.Acquisition {
	t.Helper()
	got, err := a.Acquire(context.Background(), r)
	if err != nil {
		t.Fatalf("Acquire(%s): %v", r.Key, err)
	}
	return got
}

// testInFlightExactness: 64 concurrent acquirers on a limit of 5 get
// exactly 5 leases, split across both instances when there are two; and
// while callers acquire and release in a loop, never 6 hold one at once.
func testInFlightExactness(t *testing.T, s *suite) {
	a, b := s.acquirer(t)
	lim := ratelimit.InFlight{Max: 5, TTL: time.Hour}
	var granted atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 64 {
		st := a
		if i%2 == 1 {
			st = b
		}
		wg.Go(func() {
			<-start
			got, err := st.Acquire(context.Background(), ratelimit.AcquireRequest{Key: "inflight:exact", InFlight: lim})
			if err != nil {
				t.Errorf("Acquire: %v", err)
			}
			if got.Allowed {
				granted.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if got := granted.Load(); got != 5 {
		t.Errorf("granted %d leases to 64 concurrent acquirers, want exactly 5", got)
	}
	var holders, most atomic.Int64
	for i := range 64 {
		st := a
		if i%2 == 1 {
			st = b
		}
		wg.Go(func() {
			for range 8 {
				got, err := st.Acquire(context.Background(), ratelimit.AcquireRequest{Key: "inflight:churn", InFlight: lim})
				if err != nil || !got.Allowed {
					continue
				}
				n := holders.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				holders.Add(-1)
				if _, err := st.Release(context.Background(), got.Lease); err != nil {
					t.Errorf("Release: %v", err)
				}
			}
		})
	}
	wg.Wait()
	if m := most.Load(); m > 5 || m < 1 {
		t.Errorf("at most %d holders at once under a limit of 5, want 1 to 5", m)
	}
}

// testInFlightLease: a release frees a slot once; a lease not released
// frees its slot when its TTL ends, and a full limit's RetryAfter says
// when.
func testInFlightLease(t *testing.T, s *suite) {
	a, b := s.acquirer(t)
	r := ratelimit.AcquireRequest{Key: "inflight:lease", InFlight: ratelimit.InFlight{Max: 2, TTL: 30 * time.Second}}
	first := acquire(t, a, r)
	s.h.Advance(10 * time.Second)
	second := acquire(t, a, r)
	if !first.Allowed || !second.Allowed || second.Held != 2 || first.Lease.ID == second.Lease.ID {
		t.Fatalf("two acquisitions under 2: %+v, %+v; want both granted, distinct leases, Held 2", first, second)
	}
	third := acquire(t, b, r)
	if third.Allowed || third.InFlightAllowed || third.Held != 2 || third.RetryAfter != 20*time.Second {
		t.Errorf("third: Allowed %v InFlightAllowed %v Held %d RetryAfter %v, want denied, 2 held, retry after 20s",
			third.Allowed, third.InFlightAllowed, third.Held, third.RetryAfter)
	}
	if ok, err := b.Release(context.Background(), second.Lease); err != nil || !ok {
		t.Fatalf("Release(second) = %v, %v; want true", ok, err)
	}
	if ok, _ := a.Release(context.Background(), second.Lease); ok {
		t.Errorf("releasing the same lease twice reported true the second time")
	}
	if n, err := a.Held(context.Background(), r.Key); err != nil || n != 1 {
		t.Errorf("Held = %d, %v after a release; want 1", n, err)
	}
	s.h.Advance(20 * time.Second) // the first lease's TTL ends: a crashed holder
	if n, _ := b.Held(context.Background(), r.Key); n != 0 {
		t.Errorf("Held = %d once the unreleased lease's TTL ended, want 0", n)
	}
	if ok, _ := a.Release(context.Background(), first.Lease); ok {
		t.Errorf("releasing an expired lease reported true")
	}
}

// testInFlightAllOrNothing: the lease and the window limits are one
// decision: a window denial grants no lease, a full in-flight limit counts
// no window cost.
func testInFlightAllOrNothing(t *testing.T, s *suite) {
	a, _ := s.acquirer(t)
	win := ratelimit.PerHour(2)
	r := ratelimit.AcquireRequest{Key: "inflight:aon", InFlight: ratelimit.InFlight{Max: 1, TTL: time.Minute},
		Requests: []ratelimit.Request{req("inflight:aon", win, 1)}}
	got := acquire(t, a, r)
	if !got.Allowed || len(got.Decision.Results) != 1 || got.Decision.Results[0].Used != 1 {
		t.Fatalf("first: %+v, want granted with the window at 1", got)
	}
	full := acquire(t, a, r)
	if full.Allowed || full.InFlightAllowed || !full.Decision.Results[0].Allowed {
		t.Errorf("second while held: %+v, want denied by the in-flight limit alone", full)
	}
	if used := s.peek(t, "inflight:aon", win).Used; used != 1 {
		t.Errorf("window Used = %d after an in-flight denial, want 1 (nothing counted)", used)
	}
	if _, err := a.Release(context.Background(), got.Lease); err != nil {
		t.Fatal(err)
	}
	acquireRelease(t, a, r)
	denied := acquire(t, a, r)
	if denied.Allowed || !denied.InFlightAllowed || denied.Held != 0 || denied.RetryAfter <= 0 {
		t.Errorf("third with the window spent: %+v, want denied by the window with a RetryAfter and no lease held", denied)
	}
}

func acquireRelease(t *testing.T, a ratelimit.Acquirer, r ratelimit.AcquireRequest) {
	t.Helper()
	got := acquire(t, a, r)
	if !got.Allowed {
		t.Fatalf("Acquire: denied %+v, want granted", got)
	}
	if _, err := a.Release(context.Background(), got.Lease); err != nil {
		t.Fatal(err)
	}
}
