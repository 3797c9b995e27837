package limittest

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// testPartialGrant: ConsumeAtMost grants what every limit admits, up to
// the cost asked, and a denial (nothing left) counts nothing.
func testPartialGrant(t *testing.T, s *suite) {
	pc, ok := s.h.Store.(ratelimit.PartialConsumer)
	if !ok {
		t.Skipf("%T is not a ratelimit.PartialConsumer", s.h.Store)
	}
	for _, l := range algorithms(10, time.Hour) {
		t.Run(l.Algorithm.String(), func(t *testing.T) {
			key := "partial:" + l.Algorithm.String()
			tight := ratelimit.PerHour(8).With(ratelimit.SlidingWindow)
			s.align(t, time.Hour)
			steps := []struct{ want, granted int64 }{{7, 7}, {7, 1}, {3, 0}, {50, 0}}
			for i, st := range steps {
				d, granted, err := pc.ConsumeAtMost(context.Background(), req(key, l, st.want), req(key+":tight", tight, st.want))
				if err != nil {
					t.Fatalf("step %d: ConsumeAtMost: %v", i, err)
				}
				if granted != st.granted || d.Allowed != (st.granted > 0) {
					t.Errorf("step %d: asked %d, granted %d allowed %v; want %d", i, st.want, granted, d.Allowed, st.granted)
				}
				if !d.Allowed && d.RetryAfter <= 0 {
					t.Errorf("step %d: a denial without RetryAfter", i)
				}
			}
			if used := s.peek(t, key+":tight", tight).Used; used != 8 {
				t.Errorf("tight limit Used = %d, want 8", used)
			}
		})
	}
}

// testReserve: a token bucket reserves the earliest slot up to the wait
// given, refuses (counting nothing) beyond it, and a refund gives a
// reservation back.
func testReserve(t *testing.T, s *suite) {
	rs, ok := s.h.Store.(ratelimit.Reserver)
	if !ok {
		t.Skipf("%T is not a ratelimit.Reserver", s.h.Store)
	}
	l := ratelimit.PerSecond(10).WithBurst(2) // one every 100ms, two at once
	r := req("reserve:bucket", l, 1)
	want := []time.Duration{0, 0, 100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}
	for i, w := range want {
		got, err := rs.Reserve(context.Background(), 300*time.Millisecond, r)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Decision.Allowed || got.Delay != w {
			t.Errorf("reservation %d: allowed %v delay %v, want allowed after %v", i, got.Decision.Allowed, got.Delay, w)
		}
	}
	beyond, err := rs.Reserve(context.Background(), 300*time.Millisecond, r)
	if err != nil {
		t.Fatal(err)
	}
	if beyond.Decision.Allowed || beyond.Delay != 0 || beyond.Decision.RetryAfter != 400*time.Millisecond {
		t.Errorf("beyond the wait: %+v, want denied with RetryAfter 400ms", beyond)
	}
	for range 2 {
		if err := rs.Refund(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := rs.Reserve(context.Background(), time.Second, r)
	if got.Delay != 200*time.Millisecond {
		t.Errorf("after refunding two reservations: delay %v, want 200ms", got.Delay)
	}
	s.h.Advance(time.Second)
	if got, _ := rs.Reserve(context.Background(), 0, r); !got.Decision.Allowed || got.Delay != 0 {
		t.Errorf("once the bucket refilled: %+v, want allowed at once", got)
	}
	// A window limit must admit now: it never delays.
	win := req("reserve:window", ratelimit.PerHour(1), 1)
	first, _ := rs.Reserve(context.Background(), time.Hour, win, r)
	second, _ := rs.Reserve(context.Background(), 2*time.Hour, win, r)
	if !first.Decision.Allowed || second.Decision.Allowed || second.Decision.RetryAfter != time.Hour {
		t.Errorf("window in a reservation: first %+v second %+v; want the second denied, retry after 1h", first, second)
	}
	if err := rs.Refund(context.Background(), win); err != nil {
		t.Fatal(err)
	}
	if used := s.peek(t, "reserve:window", ratelimit.PerHour(1)).Used; used != 0 {
		t.Errorf("window Used = %d after a refund, want 0", used)
	}
}

// testReset: Reset forgets a key's counters and leases.
func testReset(t *testing.T, s *suite) {
	rs, ok := s.h.Store.(ratelimit.Resetter)
	if !ok {
		t.Skipf("%T is not a ratelimit.Resetter", s.h.Store)
	}
	l := ratelimit.PerHour(1)
	s.consume(t, req("reset:k", l, 1))
	s.consume(t, req("reset:other", l, 1))
	if d := s.consume(t, req("reset:k", l, 1)); d.Allowed {
		t.Fatal("second call allowed on a quota of 1")
	}
	n, err := rs.Reset(context.Background(), "reset:k", l, l, ratelimit.PerMinute(1))
	if err != nil || n != 1 {
		t.Errorf("Reset = %d, %v; want 1 counter removed", n, err)
	}
	if d := s.consume(t, req("reset:k", l, 1)); !d.Allowed {
		t.Error("denied after Reset")
	}
	if d := s.consume(t, req("reset:other", l, 1)); d.Allowed {
		t.Error("Reset of one key reset another")
	}
	if a, ok := s.h.Store.(ratelimit.Acquirer); ok {
		in := ratelimit.AcquireRequest{Key: "reset:k", InFlight: ratelimit.InFlight{Max: 1, TTL: time.Hour}}
		acquire(t, a, in)
		if n, _ := rs.Reset(context.Background(), "reset:k"); n != 1 {
			t.Errorf("Reset of a held lease removed %d, want 1", n)
		}
		if got := acquire(t, a, in); !got.Allowed {
			t.Error("lease denied after Reset")
		}
		// Counters and live leases go in one step; a lease already
		// expired is not counted as removed.
		short := ratelimit.AcquireRequest{Key: "reset:both", InFlight: ratelimit.InFlight{Max: 3, TTL: time.Minute}}
		acquire(t, a, short)
		s.h.Advance(2 * time.Minute)
		long := ratelimit.AcquireRequest{Key: "reset:both", InFlight: ratelimit.InFlight{Max: 3, TTL: time.Hour}}
		acquire(t, a, long)
		long.Requests = []ratelimit.Request{req("reset:both", l, 1)}
		if got := acquire(t, a, long); !got.Allowed {
			t.Fatalf("Acquire with a window request: denied %+v", got)
		}
		if n, err := rs.Reset(context.Background(), "reset:both", l); err != nil || n != 3 {
			t.Errorf("Reset of a counter and two live leases = %d, %v; want 3", n, err)
		}
		if held, _ := a.Held(context.Background(), "reset:both"); held != 0 {
			t.Errorf("%d leases held after Reset, want 0", held)
		}
		if used := s.peek(t, "reset:both", l).Used; used != 0 {
			t.Errorf("counter Used = %d after Reset, want 0", used)
		}
	}
}

// testOverrideStore: overrides put in one instance are read, listed and
// deleted from the other.
func testOverrideStore(t *testing.T, s *suite) {
	a, ok := s.h.Store.(ratelimit.OverrideStore)
	if !ok {
		t.Skipf("%T is not a ratelimit.OverrideStore", s.h.Store)
	}
	b, ok := s.second().(ratelimit.OverrideStore)
	if !ok {
		b = a
	}
	ctx := context.Background()
	if err := a.PutOverride(ctx, "x", []byte("1")); err != nil {
		t.Fatal(err)
	}
	got, err := b.GetOverrides(ctx, "missing", "x")
	if err != nil || len(got) != 2 || got[0] != nil || string(got[1]) != "1" {
		t.Errorf("GetOverrides = %q, %v; want [nil 1]", got, err)
	}
	if all, _ := b.ListOverrides(ctx); len(all) != 1 {
		t.Errorf("ListOverrides = %q, want one", all)
	}
	if ok, _ := b.DeleteOverride(ctx, "x"); !ok {
		t.Error("DeleteOverride = false for a stored override")
	}
	if ok, _ := a.DeleteOverride(ctx, "x"); ok {
		t.Error("DeleteOverride = true twice")
	}
}
