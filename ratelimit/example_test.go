package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

func ExamplePerMinute() {
	l := ratelimit.PerMinute(10)
	fmt.Println(l, "capacity", l.Capacity())
	fmt.Println(l.With(ratelimit.SlidingWindow))
	fmt.Println(ratelimit.PerSecond(5).WithBurst(20), "capacity", ratelimit.PerSecond(5).WithBurst(20).Capacity())
	// Output:
	// 10 per 1m0s (fixed-window) capacity 10
	// 10 per 1m0s (sliding-window)
	// 5 per 1s (token-bucket) burst 20 capacity 20
}

// Verification codes: ten attempts per action and account, failing closed
// because a limiter outage must not open the door to brute force.
func ExampleDefine() {
	type attempt struct{ Action, Account string }
	store := memlimit.New(memlimit.Options{})
	defer store.Close()

	verify, err := ratelimit.Define(store, ratelimit.Definition[attempt]{
		Scene:       "account-verification",
		Policy:      func(a attempt) string { return a.Action },
		Subject:     func(a attempt) []string { return []string{"account", a.Account} },
		Limits:      func(attempt) []ratelimit.Limit { return []ratelimit.Limit{ratelimit.PerHour(3)} },
		FailureMode: ratelimit.FailClosed,
	})
	if err != nil {
		panic(err)
	}
	in := attempt{Action: "code-consume", Account: "user@example.com"}
	key, _ := verify.Key(in)
	fmt.Println(key)
	for range 4 {
		ok, err := verify.Allow(context.Background(), in)
		fmt.Println(ok, err)
	}
	// Output:
	// rate-limit:account-verification:code-consume:{account:user%40example.com}
	// true <nil>
	// true <nil>
	// true <nil>
	// false <nil>
}

// MemberPolicy names the member scene's actions; a typed name cannot be
// misspelled at a call site.
type MemberPolicy string

const (
	ExportUsage  MemberPolicy = "export-usage"
	RedeemCoupon MemberPolicy = "redeem-coupon"
)

type memberAction struct {
	Policy MemberPolicy
	Member string
}

// A scene whose limits come from a table keyed by policy, with several
// limits per call decided all or nothing.
func Example_scene() {
	limits := map[MemberPolicy][]ratelimit.Limit{
		ExportUsage:  {ratelimit.Per(1, time.Hour)},
		RedeemCoupon: {ratelimit.PerHour(2), ratelimit.Per(5, 24*time.Hour)},
	}
	store := memlimit.New(memlimit.Options{})
	defer store.Close()
	member, err := ratelimit.Define(store, ratelimit.Definition[memberAction]{
		Scene:   "member",
		Policy:  func(a memberAction) string { return string(a.Policy) },
		Subject: func(a memberAction) []string { return []string{"member", a.Member} },
		Limits:  func(a memberAction) []ratelimit.Limit { return limits[a.Policy] },
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, a := range []memberAction{
		{RedeemCoupon, "alice"}, {RedeemCoupon, "alice"}, {RedeemCoupon, "alice"},
		{RedeemCoupon, "bob"}, {ExportUsage, "alice"},
	} {
		d, _ := member.Consume(ctx, a)
		r, _ := d.Tightest()
		fmt.Printf("%s %s: allowed=%v remaining=%d of %s\n", a.Member, a.Policy, d.Allowed, r.Remaining, r.Limit)
	}
	// Output:
	// alice redeem-coupon: allowed=true remaining=1 of 2 per 1h0m0s (fixed-window)
	// alice redeem-coupon: allowed=true remaining=0 of 2 per 1h0m0s (fixed-window)
	// alice redeem-coupon: allowed=false remaining=0 of 2 per 1h0m0s (fixed-window)
	// bob redeem-coupon: allowed=true remaining=1 of 2 per 1h0m0s (fixed-window)
	// alice export-usage: allowed=true remaining=0 of 1 per 1h0m0s (fixed-window)
}

func ExampleLimiter_Assert() {
	store := memlimit.New(memlimit.Options{})
	defer store.Close()
	// A token bucket: RetryAfter is the time until the next unit of
	// quota, independent of where a fixed window happens to end.
	refund, _ := ratelimit.Define(store, ratelimit.Definition[string]{
		Scene:   "member",
		Policy:  func(string) string { return "refund-bill" },
		Subject: func(member string) []string { return []string{"member", member} },
		Limits: func(string) []ratelimit.Limit {
			return []ratelimit.Limit{ratelimit.PerMinute(1).With(ratelimit.TokenBucket)}
		},
	})
	ctx := context.Background()
	fmt.Println(refund.Assert(ctx, "42"))
	err := refund.Assert(ctx, "42")
	var limited *ratelimit.LimitedError
	if errors.As(err, &limited) {
		fmt.Println("limited, retry after", limited.RetryAfter().Round(time.Second))
	}
	// Output:
	// <nil>
	// limited, retry after 1m0s
}

// Stores can be used directly: one call decides several limits at once.
func ExampleStore() {
	store := memlimit.New(memlimit.Options{})
	defer store.Close()
	reqs := []ratelimit.Request{
		{Key: "rate-limit:team:chat:{team:t1}", Limit: ratelimit.PerHour(100), Cost: 1},
		{Key: "rate-limit:team:chat:{team:t1}", Limit: ratelimit.Per(1000, 24*time.Hour), Cost: 1},
	}
	d, err := store.Consume(context.Background(), reqs...)
	fmt.Println(d.Allowed, err, d.Results[0].Remaining, d.Results[1].Remaining)
	// A cost of 0 peeks: it reports without counting.
	reqs[0].Cost = 0
	d, _ = store.Consume(context.Background(), reqs[0])
	fmt.Println(d.Results[0].Used, d.Results[0].Remaining)
	// Output:
	// true <nil> 99 999
	// 1 99
}

// A cost no window can hold is refused as such, never answered as a
// denial: waiting would not help, so there is no RetryAfter to honour.
func ExampleCostExceedsQuotaError() {
	store := memlimit.New(memlimit.Options{})
	defer store.Close()
	_, err := store.Consume(context.Background(),
		ratelimit.Request{Key: "export:{member:42}", Limit: ratelimit.PerMinute(3), Cost: 5})
	var ce *ratelimit.CostExceedsQuotaError
	fmt.Println(errors.Is(err, ratelimit.ErrCostExceedsQuota), errors.Is(err, ratelimit.ErrInvalidArgument))
	if errors.As(err, &ce) {
		fmt.Println(ce.Cost, ce.Limit)
	}
	fmt.Println(err)
	// Output:
	// true true
	// 5 3 per 1m0s (fixed-window)
	// ratelimit: Request.Cost 5 exceeds the quota 3 of limit 3 per 1m0s (fixed-window), so it can never be admitted
}
