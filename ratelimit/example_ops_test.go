package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

// teamCall is the input of the examples below: one call of a team.
type teamCall struct {
	Team string
	Cost int64
}

// defineTeam makes a limiter of the "team" scene with limits and an
// in-flight limit of inFlight (0: none).
func defineTeam(store ratelimit.Store, limits []ratelimit.Limit, inFlight ratelimit.InFlight, opts ...ratelimit.Option) *ratelimit.Limiter[teamCall] {
	lim, err := ratelimit.Define(store, ratelimit.Definition[teamCall]{
		Scene:    "team",
		Policy:   func(teamCall) string { return "export" },
		Subject:  func(c teamCall) []string { return []string{"team", c.Team} },
		Limits:   func(teamCall) []ratelimit.Limit { return limits },
		Cost:     func(c teamCall) int64 { return max(c.Cost, 1) },
		InFlight: func(teamCall) ratelimit.InFlight { return inFlight },
	}, opts...)
	if err != nil {
		panic(err)
	}
	return lim
}

// At most two exports run at once per team: a third waits for a lease to
// be released (or to expire, should its holder crash).
func ExampleLimiter_Acquire() {
	store := memlimit.New(memlimit.Options{})
	defer store.Close()
	exports := defineTeam(store, []ratelimit.Limit{ratelimit.PerHour(100)}, ratelimit.InFlight{Max: 2, TTL: time.Minute})
	ctx := context.Background()
	in := teamCall{Team: "acme"}

	var leases []ratelimit.Lease
	for range 3 {
		a, err := exports.Acquire(ctx, in)
		fmt.Println("allowed:", a.Allowed, "held:", a.Held, "err:", err)
		if a.Allowed {
			leases = append(leases, a.Lease)
		}
	}
	released, _ := exports.Release(ctx, leases[0])
	fmt.Println("released:", released)
	a, _ := exports.Acquire(ctx, in)
	fmt.Println("allowed:", a.Allowed, "held:", a.Held)
	// Output:
	// allowed: true held: 1 err: <nil>
	// allowed: true held: 2 err: <nil>
	// allowed: false held: 2 err: <nil>
	// released: true
	// allowed: true held: 2
}

// A sender that would rather wait than be refused: a token bucket of one
// call a second reserves the next slot, and the caller proceeds when it
// comes. The fake clock stands in for time passing.
func ExampleLimiter_WaitFor() {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := memlimit.New(memlimit.Options{Clock: clk, SweepInterval: -1})
	defer store.Close()
	send := defineTeam(store, []ratelimit.Limit{ratelimit.PerSecond(1).WithBurst(1)}, ratelimit.InFlight{},
		ratelimit.WithClock(clk))
	ctx := context.Background()
	in := teamCall{Team: "acme"}

	w, _ := send.WaitFor(ctx, in, 5*time.Second)
	fmt.Println("first: allowed", w.Allowed, "waited", w.Waited)

	done := make(chan ratelimit.Waited)
	go func() {
		w, _ := send.WaitFor(ctx, in, 5*time.Second)
		done <- w
	}()
	clk.BlockUntil(1) // the second call holds the next slot and sleeps
	clk.Advance(time.Second)
	w = <-done
	fmt.Println("second: allowed", w.Allowed, "waited", w.Waited)

	// The next slot is a second away: beyond a 100ms wait, refused at once.
	w, _ = send.WaitFor(ctx, in, 100*time.Millisecond)
	fmt.Println("third: allowed", w.Allowed, "retry after", w.Decision.RetryAfter)
	// Output:
	// first: allowed true waited 0s
	// second: allowed true waited 1s
	// third: allowed false retry after 1s
}

// Wait takes the longest wait from the context's deadline.
func ExampleLimiter_Wait() {
	store := memlimit.New(memlimit.Options{})
	defer store.Close()
	send := defineTeam(store, []ratelimit.Limit{ratelimit.PerHour(1).WithBurst(1)}, ratelimit.InFlight{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	fmt.Println(send.Wait(ctx, teamCall{Team: "acme"}))
	// The next slot is an hour away: refused at once, not after a second.
	err := send.Wait(ctx, teamCall{Team: "acme"})
	fmt.Println(err != nil, ctx.Err())
	// Output:
	// <nil>
	// true <nil>
}

// A batch sender takes what is left of the quota rather than nothing.
func ExampleLimiter_AllowAtMost() {
	store := memlimit.New(memlimit.Options{})
	defer store.Close()
	batch := defineTeam(store, []ratelimit.Limit{ratelimit.PerHour(5)}, ratelimit.InFlight{})
	ctx := context.Background()
	for _, cost := range []int64{3, 3, 3} {
		p, err := batch.AllowAtMost(ctx, teamCall{Team: "acme", Cost: cost})
		fmt.Println("asked", cost, "granted", p.Granted, "allowed", p.Decision.Allowed, err)
	}
	// Output:
	// asked 3 granted 3 allowed true <nil>
	// asked 3 granted 2 allowed true <nil>
	// asked 3 granted 0 allowed false <nil>
}

// The plan's limit is 2 an hour; one team has a static override of 5 and
// another gets an unlimited dynamic one, stored where every process sharing
// the store sees it.
func ExampleWithOverrides() {
	store := memlimit.New(memlimit.Options{})
	defer store.Close()
	ov, err := ratelimit.NewOverrides(store, ratelimit.OverridesOptions{Static: []ratelimit.Override{{
		Scene: "team", Policy: "export", Subject: []string{"team", "big"},
		Limits: []ratelimit.Limit{ratelimit.PerHour(5)},
	}}})
	if err != nil {
		panic(err)
	}
	exports := defineTeam(store, []ratelimit.Limit{ratelimit.PerHour(2)}, ratelimit.InFlight{}, ratelimit.WithOverrides(ov))
	ctx := context.Background()
	err = ov.Set(ctx, ratelimit.Override{Scene: "team", Policy: "export", Subject: []string{"team", "vip"}, Unlimited: true})
	fmt.Println("set:", err)

	for _, team := range []string{"small", "big", "vip"} {
		admitted := 0
		for range 10 {
			if ok, _ := exports.Allow(ctx, teamCall{Team: team}); ok {
				admitted++
			}
		}
		fmt.Println(team, "admitted", admitted, "of 10")
	}
	deleted, _ := ov.Delete(ctx, "team", "export", []string{"team", "vip"})
	static, dynamic, _ := ov.List(ctx)
	fmt.Println("deleted:", deleted, "static:", len(static), "dynamic:", len(dynamic))
	// Output:
	// set: <nil>
	// small admitted 2 of 10
	// big admitted 5 of 10
	// vip admitted 10 of 10
	// deleted: true static: 1 dynamic: 0
}

// An operator reads a subject's counters and resets them.
func ExampleLimiter_Reset() {
	store := memlimit.New(memlimit.Options{})
	defer store.Close()
	exports := defineTeam(store, []ratelimit.Limit{ratelimit.PerHour(3)}, ratelimit.InFlight{Max: 2, TTL: time.Minute})
	ctx := context.Background()
	in := teamCall{Team: "acme"}
	for range 2 {
		exports.Acquire(ctx, in)
	}
	ins, _ := exports.Inspect(ctx, in)
	fmt.Println(ins.Key)
	fmt.Println("remaining", ins.Decision.Results[0].Remaining, "held", ins.Held, "of", ins.InFlight.Max)

	removed, err := exports.Reset(ctx, in)
	fmt.Println("removed", removed, err)
	ins, _ = exports.Inspect(ctx, in)
	fmt.Println("remaining", ins.Decision.Results[0].Remaining, "held", ins.Held, "of", ins.InFlight.Max)
	// Output:
	// rate-limit:team:export:{team:acme}
	// remaining 1 held 2 of 2
	// removed 3 <nil>
	// remaining 3 held 0 of 2
}
