package ratelimit_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

type team struct {
	ID   string
	Cost int64
}

func teamLimiter(t *testing.T, clk *clock.Fake, limits []ratelimit.Limit, ov *ratelimit.Overrides) (*ratelimit.Limiter[team], *memlimit.Store) {
	t.Helper()
	store := memlimit.New(memlimit.Options{Clock: clk, SweepInterval: -1})
	opts := []ratelimit.Option{ratelimit.WithClock(clk), generous}
	if ov != nil {
		opts = append(opts, ratelimit.WithOverrides(ov))
	}
	lim, err := ratelimit.Define(store, ratelimit.Definition[team]{
		Scene:    "team",
		Policy:   func(team) string { return "export" },
		Subject:  func(in team) []string { return []string{"team", in.ID} },
		Limits:   func(team) []ratelimit.Limit { return limits },
		Cost:     func(in team) int64 { return max(in.Cost, 1) },
		InFlight: func(team) ratelimit.InFlight { return ratelimit.InFlight{Max: 2, TTL: time.Minute} },
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return lim, store
}

func TestWaitReservesTheEarliestSlot(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	lim, _ := teamLimiter(t, clk, []ratelimit.Limit{ratelimit.PerSecond(10).WithBurst(1)}, nil)
	ctx := context.Background()
	if err := lim.Wait(ctx, team{ID: "a"}); err != nil {
		t.Fatalf("first Wait: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- lim.Wait(ctx, team{ID: "a"}) }()
	clk.BlockUntil(1) // the second call sleeps on its reserved slot
	select {
	case err := <-done:
		t.Fatalf("second Wait returned %v before its slot", err)
	default:
	}
	clk.Advance(100 * time.Millisecond)
	if err := <-done; err != nil {
		t.Fatalf("second Wait: %v", err)
	}
	w, err := lim.WaitFor(ctx, team{ID: "a"}, 50*time.Millisecond)
	if err != nil || w.Allowed || w.Decision.RetryAfter != 100*time.Millisecond || w.Waited != 0 {
		t.Fatalf("WaitFor 50ms for a 100ms slot = %+v, %v; want a denial at once, retry after 100ms", w, err)
	}
}

func TestWaitCancelledGivesTheSlotBack(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	lim, _ := teamLimiter(t, clk, []ratelimit.Limit{ratelimit.PerSecond(10).WithBurst(1)}, nil)
	ctx := context.Background()
	if _, err := lim.Check(ctx, team{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- lim.Wait(cctx, team{ID: "a"}) }()
	clk.BlockUntil(1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Wait = %v, want context.Canceled", err)
	}
	// Had the abandoned slot stayed reserved, the bucket would be full
	// for 200ms.
	if got, _ := lim.Inspect(ctx, team{ID: "a"}); got.Decision.Results[0].ResetAfter != 100*time.Millisecond {
		t.Errorf("bucket resets after %v, want 100ms: only the first call counted", got.Decision.Results[0].ResetAfter)
	}
}

func TestAcquireAndAllowAtMost(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	lim, _ := teamLimiter(t, clk, []ratelimit.Limit{ratelimit.PerHour(10)}, nil)
	ctx := context.Background()
	var leases []ratelimit.Lease
	for i, want := range []bool{true, true, false} {
		a, err := lim.Acquire(ctx, team{ID: "a"})
		if err != nil || a.Allowed != want {
			t.Fatalf("Acquire %d = %+v, %v; want allowed %v", i, a, err, want)
		}
		leases = append(leases, a.Lease)
	}
	if ok, err := lim.Release(ctx, leases[0]); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	p, err := lim.AllowAtMost(ctx, team{ID: "a", Cost: 100})
	if err != nil || p.Granted != 8 {
		t.Errorf("AllowAtMost(100) after two acquisitions = %+v, %v; want 8 granted", p, err)
	}
	if n, err := lim.Reset(ctx, team{ID: "a"}); err != nil || n != 2 {
		t.Errorf("Reset = %d, %v; want the counter and one lease", n, err)
	}
}

func TestOverridesReplaceLimits(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	store := memlimit.New(memlimit.Options{Clock: clk, SweepInterval: -1})
	ov, err := ratelimit.NewOverrides(store, ratelimit.OverridesOptions{Clock: clk, Static: []ratelimit.Override{
		{Scene: "team", Policy: "export", Subject: []string{"team", "vip"}, Unlimited: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	lim, _ := teamLimiter(t, clk, []ratelimit.Limit{ratelimit.PerHour(1)}, ov)
	ctx := context.Background()
	// allowed makes one call per id, in order, and reports each decision.
	allowed := func(ids ...string) []bool {
		out := make([]bool, len(ids))
		for i, id := range ids {
			ok, err := lim.Allow(ctx, team{ID: id})
			if err != nil {
				t.Fatal(err)
			}
			out[i] = ok
		}
		return out
	}
	if got, want := allowed("vip", "vip", "a", "a"), []bool{true, true, true, false}; !slices.Equal(got, want) {
		t.Fatalf("static unlimited subject limited, or plain subject not limited: got %v, want %v", got, want)
	}
	big := ratelimit.Override{Scene: "team", Policy: "export", Subject: []string{"team", "a"}, Limits: []ratelimit.Limit{ratelimit.PerHour(3)}}
	if err := ov.Set(ctx, big); err != nil {
		t.Fatal(err)
	}
	if got, want := allowed("a", "a", "a"), []bool{true, true, false}; !slices.Equal(got, want) {
		t.Errorf("dynamic override of 3 an hour not applied to a subject that had used 1: got %v, want %v", got, want)
	}
	policy := ratelimit.Override{Scene: "team", Policy: "export", Unlimited: true}
	if err := ov.Set(ctx, policy); err != nil {
		t.Fatal(err)
	}
	if got, want := allowed("b", "b"), []bool{true, true}; !slices.Equal(got, want) {
		t.Errorf("unlimited policy override not applied: got %v, want %v", got, want)
	}
	if ok, _ := ov.Delete(ctx, "team", "export", nil); !ok {
		t.Error("Delete of the policy override = false")
	}
	static, dynamic, err := ov.List(ctx)
	if err != nil || len(static) != 1 || len(dynamic) != 1 {
		t.Errorf("List = %d static, %d dynamic, %v; want 1 and 1", len(static), len(dynamic), err)
	}
}

func TestOverrideValidate(t *testing.T) {
	tests := []struct {
		o    ratelimit.Override
		want string
	}{
		{ratelimit.Override{Policy: "p", Unlimited: true}, "Override.Scene"},
		{ratelimit.Override{Scene: "s", Policy: "p"}, "must set limits"},
		{ratelimit.Override{Scene: "s", Policy: "p", Subject: []string{"a"}, Unlimited: true}, "type/id pairs"},
		{ratelimit.Override{Scene: "s", Policy: "p", Unlimited: true, Limits: []ratelimit.Limit{ratelimit.PerHour(1)}}, "together"},
	}
	for _, tc := range tests {
		err := tc.o.Validate()
		if !errors.Is(err, ratelimit.ErrInvalidArgument) || !contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want an invalid argument mentioning %q", tc.o, err, tc.want)
		}
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub)))
}
