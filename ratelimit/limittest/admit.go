package limittest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// admitter returns the store and the second instance as Admitters,
// skipping the test when the store is not one.
func (s *suite) admitter(t *testing.T) (ratelimit.Admitter, ratelimit.Admitter) {
	return storesAs[ratelimit.Admitter](t, s)
}

func admit(t *testing.T, a ratelimit.Admitter, r ratelimit.AdmitRequest) ratelimit.Admission {
	t.Helper()
	got, err := a.Admit(context.Background(), r)
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	if len(got.Gates) != len(r.Gates) || len(got.Held) != len(r.Leases) || len(got.Groups) != len(r.Groups) {
		t.Fatalf("Admit: %d gates, %d held, %d groups; want %d, %d, %d",
			len(got.Gates), len(got.Held), len(got.Groups), len(r.Gates), len(r.Leases), len(r.Groups))
	}
	return got
}

// testAdmitAllOrNothing: a closed gate, a full lease key or one group
// without room holds the whole admission, and nothing moves; once room
// returns everything is taken at once, and RetryAfter says when.
func testAdmitAllOrNothing(t *testing.T, s *suite) {
	a, b := s.admitter(t)
	ctx := context.Background()
	tb := ratelimit.Per(2, time.Minute).With(ratelimit.TokenBucket)
	fw := ratelimit.PerMinute(10)
	r := ratelimit.AdmitRequest{
		Gates:  []string{"admit:aon:gate"},
		Leases: []ratelimit.LeaseRequest{{Key: "admit:aon:a", InFlight: ratelimit.InFlight{Max: 2, TTL: time.Hour}}, {Key: "admit:aon:b", InFlight: ratelimit.InFlight{Max: 1, TTL: 90 * time.Second}}},
		Groups: []ratelimit.RequestGroup{{Requests: []ratelimit.Request{req("admit:aon:x", tb, 1)}}, {Requests: []ratelimit.Request{req("admit:aon:y", fw, 3)}}},
	}
	first := admit(t, a, r)
	if !first.Allowed || len(first.Leases) != 2 || first.Held[0] != 1 || first.Held[1] != 1 || first.Groups[1].Results[0].Used != 3 {
		t.Fatalf("first admission: %+v, want allowed with two leases and 3 counted", first)
	}
	held := admit(t, b, r) // lease key b is full
	if held.Allowed || held.LeaseRetry[1] != 90*time.Second || held.RetryAfter != 90*time.Second || held.LeaseRetry[0] != 0 {
		t.Errorf("second admission: %+v, want held by lease key b for 90s", held)
	}
	if n, _ := a.Held(ctx, "admit:aon:a"); n != 1 {
		t.Errorf("lease key a holds %d after a held admission, want 1 (nothing taken)", n)
	}
	if u := s.peek(t, "admit:aon:y", fw).Used; u != 3 {
		t.Errorf("window Used = %d after a held admission, want 3", u)
	}
	if _, err := a.Release(ctx, first.Leases[1]); err != nil {
		t.Fatal(err)
	}
	now, ok := clockOf(s)
	if !ok {
		t.Fatal("clockOf: cannot read the store's time")
	}
	if _, err := b.CloseUntil(ctx, "admit:aon:gate", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	closed := admit(t, a, r)
	if closed.Allowed || closed.Gates[0] <= 0 || closed.RetryAfter < closed.Gates[0] {
		t.Errorf("admission on a closed gate: %+v, want held by the gate", closed)
	}
	if left, _ := a.ClosedFor(ctx, "admit:aon:gate"); left <= 0 {
		t.Errorf("ClosedFor = %v after CloseUntil, want positive", left)
	}
	r.Gates = nil
	second := admit(t, a, r)
	if !second.Allowed || second.Groups[0].Results[0].Used != 2 {
		t.Fatalf("admission without the gate: %+v, want allowed with the bucket at 2", second)
	}
	third := admit(t, b, r) // the bucket is empty now; lease b is full again
	if third.Allowed || third.Groups[0].RetryAfter != 30*time.Second || third.Groups[1].RetryAfter != 0 {
		t.Errorf("third: %+v, want held by group 0 for 30s", third)
	}
}

// testAdmitFallback: a group takes its first choice when it admits, else
// its fallback, judged on the counters as they were; the counters of the
// choice not taken do not move.
func testAdmitFallback(t *testing.T, s *suite) {
	a, _ := s.admitter(t)
	total := ratelimit.Limit{Quota: 10, Window: time.Minute, Algorithm: ratelimit.TokenBucket}
	shared := total
	shared.Burst = 6 // the top 4 are a reserve
	floor := ratelimit.Per(2, time.Minute).WithBurst(4)
	group := func(cost int64) ratelimit.AdmitRequest {
		return ratelimit.AdmitRequest{Groups: []ratelimit.RequestGroup{{
			Requests: []ratelimit.Request{req("admit:fb:total", total, cost), req("admit:fb:floor", floor, cost)},
			Fallback: []ratelimit.Request{req("admit:fb:total", shared, cost)},
		}}}
	}
	got := admit(t, a, group(2)) // under the floor: first choice
	if !got.Allowed || got.Groups[0].Fallback || got.Groups[0].Results[1].Used != 2 {
		t.Fatalf("first: %+v, want the first choice with the floor at 2", got)
	}
	got = admit(t, a, group(3)) // the floor is spent: the shared part, 2+3 <= 6
	if !got.Allowed || !got.Groups[0].Fallback || got.Groups[0].Results[0].Used != 5 {
		t.Fatalf("second: %+v, want the fallback with the total at 5", got)
	}
	if u := s.peek(t, "admit:fb:floor", floor).Used; u != 2 {
		t.Errorf("floor Used = %d after a fallback, want 2 (untouched)", u)
	}
	got = admit(t, a, group(2)) // the floor's burst has 2 more: first choice, above the shared part
	if !got.Allowed || got.Groups[0].Fallback || got.Groups[0].Results[0].Used != 7 {
		t.Fatalf("third: %+v, want the first choice with the total at 7", got)
	}
	got = admit(t, a, group(1)) // 7+1 > 6 shared; the floor has no room
	if got.Allowed || !got.Groups[0].Fallback || got.RetryAfter != 12*time.Second {
		t.Errorf("fourth: %+v, want held by the shared part for 12s", got)
	}
	s.h.Advance(time.Minute) // the floor refills 2; the total drains to 0
	got = admit(t, a, group(2))
	if !got.Allowed || got.Groups[0].Fallback {
		t.Errorf("after a minute: %+v, want the first choice", got)
	}
}

// testAdmitExactness: concurrent admissions across both instances never
// take more than the in-flight maximum or the window's quota.
func testAdmitExactness(t *testing.T, s *suite) {
	a, b := s.admitter(t)
	r := ratelimit.AdmitRequest{
		Leases: []ratelimit.LeaseRequest{{Key: "admit:exact", InFlight: ratelimit.InFlight{Max: 7, TTL: time.Hour}}},
		Groups: []ratelimit.RequestGroup{{Requests: []ratelimit.Request{req("admit:exact", ratelimit.PerHour(5), 1)}}},
	}
	var granted atomic.Int64
	var wg sync.WaitGroup
	for i := range 40 {
		st := a
		if i%2 == 1 {
			st = b
		}
		wg.Go(func() {
			got, err := st.Admit(context.Background(), r)
			if err != nil {
				t.Errorf("Admit: %v", err)
			}
			if got.Allowed {
				granted.Add(1)
			}
		})
	}
	wg.Wait()
	if n := granted.Load(); n != 5 {
		t.Errorf("granted %d of 40 concurrent admissions under 5 per hour, want 5", n)
	}
	if n, _ := a.Held(context.Background(), "admit:exact"); n != 5 {
		t.Errorf("Held = %d, want 5", n)
	}
}

// testCharge: a charge counts beyond the limit; a token bucket carries
// the excess as debt that drains at its rate, a window forgets it when it
// ends; a refund pays debt back.
func testCharge(t *testing.T, s *suite) {
	a, b := s.admitter(t)
	ctx := context.Background()
	tb := ratelimit.Per(10, 10*time.Second).With(ratelimit.TokenBucket) // one per second
	d, err := a.Charge(ctx, req("charge:tb", tb, 25))
	if err != nil {
		t.Fatal(err)
	}
	if r := d.Results[0]; r.Used != 25 || r.Remaining != 0 {
		t.Errorf("after charging 25 on a bucket of 10: Used %d Remaining %d, want 25 and 0", r.Used, r.Remaining)
	}
	if got := s.consume(t, req("charge:tb", tb, 1)); got.Allowed || got.RetryAfter != 16*time.Second {
		t.Errorf("cost 1 after the overdraft: allowed %v retry %v, want denied for 16s (15 of debt, then one)", got.Allowed, got.RetryAfter)
	}
	if err := b.Refund(ctx, req("charge:tb", tb, 10)); err != nil {
		t.Fatal(err)
	}
	if got := s.consume(t, req("charge:tb", tb, 1)); got.Allowed || got.RetryAfter != 6*time.Second {
		t.Errorf("cost 1 after refunding 10: allowed %v retry %v, want denied for 6s", got.Allowed, got.RetryAfter)
	}
	s.h.Advance(6 * time.Second)
	if got := s.consume(t, req("charge:tb", tb, 1)); !got.Allowed {
		t.Errorf("cost 1 once the debt is repaid: denied, want allowed")
	}

	fw := ratelimit.PerMinute(10)
	if _, err := b.Charge(ctx, req("charge:fw", fw, 14)); err != nil {
		t.Fatal(err)
	}
	if got := s.consume(t, req("charge:fw", fw, 1)); got.Allowed || got.Results[0].Used != 14 || got.RetryAfter != time.Minute {
		t.Errorf("fixed window after charging 14 of 10: %+v, want denied, Used 14, until the window ends", got)
	}
	s.h.Advance(time.Minute)
	if got := s.consume(t, req("charge:fw", fw, 10)); !got.Allowed {
		t.Errorf("fixed window in the next window: denied, want the excess forgotten")
	}
	sw := ratelimit.PerMinute(10).With(ratelimit.SlidingWindow)
	s.align(t, time.Minute)
	if _, err := a.Charge(ctx, req("charge:sw", sw, 14)); err != nil {
		t.Fatal(err)
	}
	if got := s.consume(t, req("charge:sw", sw, 1)); got.Allowed || got.Results[0].Used != 14 {
		t.Errorf("sliding window after charging 14 of 10: %+v, want denied with Used 14", got)
	}
	s.h.Advance(2 * time.Minute) // the charged sub-window has left the sliding window
	if got := s.consume(t, req("charge:sw", sw, 10)); !got.Allowed {
		t.Errorf("sliding window two windows later: denied, want the excess forgotten")
	}
	if _, err := a.Charge(ctx, req("charge:bad", fw, -1)); err == nil {
		t.Errorf("Charge with a negative cost: no error, want ErrInvalidArgument")
	}
}

// testCloseUntil: a close never shortens another; the gate opens by
// itself.
func testCloseUntil(t *testing.T, s *suite) {
	a, b := s.admitter(t)
	ctx := context.Background()
	base, ok := clockOf(s)
	if !ok {
		t.Fatal("clockOf: cannot read the store's time")
	}
	if _, err := a.CloseUntil(ctx, "gate:x", base.Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CloseUntil(ctx, "gate:x", base.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if left, _ := b.ClosedFor(ctx, "gate:x"); left != 10*time.Second {
		t.Errorf("ClosedFor = %v after closes of 10s and 2s, want 10s", left)
	}
	s.h.Advance(10 * time.Second)
	if left, _ := a.ClosedFor(ctx, "gate:x"); left != 0 {
		t.Errorf("ClosedFor = %v once the time passed, want 0", left)
	}
	r := ratelimit.AdmitRequest{Gates: []string{"gate:x"}}
	if got := admit(t, a, r); !got.Allowed {
		t.Errorf("admission on an opened gate: %+v, want allowed", got)
	}
}

// clockOf learns the store's time from a gate: closing one at a far time
// and reading how long it stays closed.
func clockOf(s *suite) (time.Time, bool) {
	a, ok := s.h.Store.(ratelimit.Admitter)
	if !ok {
		return time.Time{}, false
	}
	far := time.Unix(1<<33, 0)
	ctx := context.Background()
	if _, err := a.CloseUntil(ctx, "limittest:clock", far); err != nil {
		return time.Time{}, false
	}
	left, err := a.ClosedFor(ctx, "limittest:clock")
	if err != nil {
		return time.Time{}, false
	}
	return far.Add(-left), true
}
