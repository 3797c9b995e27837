// Package flow controls how fast and how wide a service calls someone else's
// rate-limited API: a scraper, a search client, a webhook sender.
//
// It has five parts that compose:
//
//   - Budget is a token bucket of calls per period that waiters take from in
//     strict arrival order. SharedBudget is the same budget kept in a
//     ratelimit.Store (Redis), so a whole fleet of processes shares it.
//   - Map runs a function over a slice with bounded parallelism and returns
//     the results in input order.
//   - Sweep runs one upstream call per item (dates, pages, ids) under a hard
//     item cap and a breaker that stops paying for failures that will only
//     repeat.
//   - Retry repeats a call with capped, jittered exponential backoff, honours
//     the server's Retry-After and can take every attempt from a budget.
//   - Transport wraps an http.RoundTripper with a budget, retries and the
//     classification of HTTP failures into transient and permanent.
//
// # One budget per upstream, shared by every caller
//
// An upstream's limit is a property of the upstream, not of a call site, so
// create one Budget per upstream when the process starts and hand the same
// value to every caller: package-level variables, a client struct, or the
// Transport of a shared http.Client. Nested and parallel callers then draw
// from the same tokens, and the rate cannot be multiplied by calling a
// function that calls another. Workers in Map and Sweep only decide how
// many calls may be in flight; the budget decides how many may start per
// period, so more workers than calls per second only adds goroutines that
// wait. Retries take from the budget too: a retry is a call.
package flow
