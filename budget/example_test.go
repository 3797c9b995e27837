package budget_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

// Admit a call to an LLM API with its estimated tokens, then settle it
// with what it really used.
func ExampleBudgets_Admit() {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	store := memlimit.New(memlimit.Options{Clock: clk}) // redislimit for a fleet
	defer store.Close()
	b, _ := budget.New(budget.Options{Store: store, Clock: clk})
	_ = b.Define("openai", budget.Config{
		Limits: budget.Limits{
			Requests: budget.PerMinute(500),
			Units:    map[string]budget.Rate{"tokens": budget.PerMinute(200_000)},
			InFlight: 50,
		},
		PerTenant: budget.Limits{Requests: budget.PerMinute(60)},
	})
	ctx := context.Background()

	a, _ := b.Admit(ctx, budget.Claim{Tenant: "acme", Costs: map[string]budget.Cost{"openai": {"tokens": 1200}}})
	fmt.Println("admitted:", a.Admitted)

	// ... call the API; it reports 3,000 tokens used.
	s, _ := b.Settle(ctx, a.Ticket, map[string]budget.Cost{"openai": {"tokens": 3000}})
	fmt.Println("charged beyond the estimate:", s.Charged["openai"]["tokens"])

	// A claim larger than what is left is held, and says until when.
	a, _ = b.Admit(ctx, budget.Claim{Tenant: "acme", Costs: map[string]budget.Cost{"openai": {"tokens": 199_000}}})
	fmt.Println("admitted:", a.Admitted)
	fmt.Println(a.Hold)
	// Output:
	// admitted: true
	// charged beyond the estimate: 1800
	// admitted: false
	// budget openai: tokens (total) full for 600ms
}

// Read what an upstream says about its limits, and close the budget until
// its reset.
func ExampleFromResponse() {
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}}
	resp.Header.Set("x-ratelimit-remaining-requests", "499")
	resp.Header.Set("x-ratelimit-remaining-tokens", "0")
	resp.Header.Set("x-ratelimit-reset-tokens", "6m0s")

	h := budget.FromResponse(resp, now)
	fmt.Println("tokens left:", h.Remaining["tokens"])
	fmt.Println("closed until:", h.Until().Format(time.TimeOnly))

	resp = &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"2"}}}
	h = budget.FromResponse(resp, now)
	fmt.Println("limited:", h.Limited, "until:", h.Until().Format(time.TimeOnly))
	// Output:
	// tokens left: 0
	// closed until: 15:10:05
	// limited: true until: 15:04:07
}
