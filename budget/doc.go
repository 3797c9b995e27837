// Package budget admits work on shared upstream resources: an LLM API, a
// site being crawled, a payment provider. A budget is a named set of limits
// on one such resource, kept in a rate-limit store (memlimit in one
// process, redislimit for a whole fleet): requests per window, units per
// window for named units (tokens, bytes, credits), and how many may be in
// flight at once; in total, and optionally per tenant, with each tenant's
// floor and ceiling of the total.
//
//	b, _ := budget.New(budget.Options{Store: store})
//	_ = b.Define("openai", budget.Config{
//		Limits: budget.Limits{
//			Requests: budget.PerMinute(500),
//			Units:    map[string]budget.Rate{"tokens": budget.PerMinute(200_000)},
//			InFlight: 50,
//		},
//		PerTenant: budget.Limits{Requests: budget.PerMinute(60)},
//	})
//
// # Admission and settlement
//
// Work declares what it will spend as a Claim: a tenant and estimated
// costs on one or more budgets ({"openai": {"requests": 1, "tokens":
// 1200}}). Admit decides every limit of every named budget together, all
// or nothing, in one store operation: either the claim is admitted (its
// costs are charged and its in-flight places taken, recorded in a Ticket)
// or nothing moves and the Admission says what holds it (the budget, the
// limit, its scope) and when room returns. The earliest time is computed
// from the limits, so a waiter need not poll.
//
// When the work ends, Settle charges what it used beyond the estimate and
// refunds what it did not use, and releases its in-flight places. A
// charge beyond what is left is an overdraft: it is counted in full and
// carried forward as debt, and the budget holds every claim until the
// debt has drained at the budget's rate. Budgets count by token buckets
// (GCRA) for exactly this reason: a bucket's arrival time carries a debt
// naturally, where a window would forget it at its end.
//
// # Closing and learning
//
// Close shuts a budget for the whole fleet until a time: what an upstream
// asks for with 429 and Retry-After. The closure is checked in the same
// store operation as the limits. FromResponse reads an upstream's
// rate-limit headers (Retry-After, the IETF RateLimit fields,
// x-ratelimit-* as LLM APIs and GitHub send them) into a Hint, and Learn
// applies one; Transport does both for every response of an http.Client.
//
// # Fair shares
//
// Share gives each tenant a floor (a guaranteed minimum) and a ceiling (a
// burst maximum) of the total; see Share for the rule by which floors are
// honoured. Ordering waiting work fairly between tenants is the queue's
// part: budgets decide whether a claim fits now, and say when it will.
package budget
