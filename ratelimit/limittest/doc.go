// Package limittest is the conformance suite every ratelimit.Store must
// pass, and the specification a store implements. Run it from a store's
// tests:
//
//	func TestConformance(t *testing.T) {
//		limittest.Run(t, func(t *testing.T) limittest.Harness {
//			clk := clock.NewFake(time.Unix(1_700_000_000, 0))
//			s := memlimit.New(memlimit.Options{Clock: clk})
//			t.Cleanup(func() { s.Close() })
//			return limittest.Harness{Store: s, Advance: clk.Advance}
//		})
//	}
//
// # Time
//
// A store reads its clock once per Consume call and decides every request
// of the call at that instant t. Time is counted in whole microseconds since
// the Unix epoch (a store truncates finer clocks); every duration a store
// reports is a whole number of microseconds. Windows are whole milliseconds
// (Limit.Validate enforces it). W is Limit.Window, Q is Limit.Quota, n is
// Request.Cost.
//
// # Counters and atomicity
//
// A store keeps one counter per (Request.Key, Request.Limit.ID()): limits
// that differ only in Quota or Burst share a counter; a different window
// or algorithm is a different counter. One Consume call is one atomic
// decision over all its requests, taken on the state before the call:
// every request is judged alone (Result.Allowed); the decision is allowed
// only when all are, and only then does any counter move. A denied
// decision moves nothing, so denied calls never use quota.
//
// Result fields describe each counter after the decision (so, for a denied
// decision, the state before it): Used is the cost counted, Remaining what
// is still admitted now, ResetAfter when the counter is fully available
// again (0 when the counter holds nothing), RetryAfter how long until the
// same request would be allowed by this limit with no other traffic (0
// when Allowed).
// Decision.RetryAfter is the largest RetryAfter of the denying results.
//
// A store may forget a counter once it holds nothing: a fixed window after
// its window ends, a sliding window one window later, a token bucket once
// tat <= t. It may also forget counters to bound its memory (memlimit's
// MaxKeys); the suite never fills a store that far.
//
// Cost 0 is a peek: allowed, moves nothing, reports the fields above.
// A cost above Limit.Capacity() can never be allowed: it is denied, moves
// nothing, and its RetryAfter is 0 because waiting does not help.
//
// Invalid arguments (see ratelimit.ValidateRequests) return an error
// matching ratelimit.ErrInvalidArgument before the store is touched. A
// context that is already done returns an error matching ctx.Err() and
// moves nothing.
//
// In the formulas below, Allowed is the limit's own verdict
// (Result.Allowed); "the decision is allowed" means every limit of the call
// admitted its request.
//
// # Fixed window (ratelimit.FixedWindow)
//
// Windows are aligned to multiples of W since the Unix epoch: the window
// of t starts at s = t - t mod W. Let c be the cost counted in that window
// (a count from an earlier window is 0).
//
//	Allowed    = c + n <= Q
//	Used       = c + n if the decision is allowed, else c
//	Remaining  = max(0, Q - Used)
//	ResetAfter = s + W - t if Used > 0, else 0
//	RetryAfter = s + W - t when this limit denies (n <= Q)
//
// # Sliding window (ratelimit.SlidingWindow)
//
// Windows are aligned as for the fixed window. Let c be the cost counted in
// the current window, p the cost counted in the window just before it (0
// when older), and e = t - s the time elapsed in the current window. The
// estimate weights the previous window by the part of it still inside the
// sliding window, rounding down:
//
//	E          = floor(p × (W - e) / W) + c
//	Allowed    = E + n <= Q
//	Used       = E + n if the decision is allowed, else E
//	Remaining  = max(0, Q - Used)
//	ResetAfter = s + 2W - t if c > 0 after the decision,
//	             else s + W - t if p > 0, else 0
//
// When this limit denies (n <= Q), RetryAfter is the smallest
// whole-microsecond d > 0 for which the estimate at t + d, with no other
// traffic, admits n. Within the current window that needs
// floor(p × (W - e1) / W) <= A with A = Q - n - c >= 0, first true at
// e1 = W - floor(((A+1) × W - 1) / p); when A >= 0 and e1 < W,
// d = e1 - e. Otherwise it falls in the next window, where p becomes c and
// c becomes 0: with e2 = max(0, W - floor(((Q-n+1) × W - 1) / c)) (0 when
// c is 0), d = s + W - t + e2.
//
// # Token bucket (ratelimit.TokenBucket)
//
// GCRA with emission interval T = ceil(W / Q) microseconds (rounded up so
// the rate is never exceeded) and capacity C = Limit.Capacity() (Burst, or
// Q when Burst is 0), tolerance τ = C × T. The state is the theoretical
// arrival time tat (a counter without state has tat <= t). With
// base = max(tat, t) and new = base + n × T:
//
//	Allowed    = new - t <= τ
//	tat'       = new if the decision is allowed, else base
//	Used       = ceil((tat' - t) / T)
//	Remaining  = max(0, C - Used)
//	ResetAfter = tat' - t
//	RetryAfter = new - t - τ when this limit denies (n <= C)
//
// So a fresh bucket admits C at once and then one unit of cost every T.
// A token bucket cannot admit more than one unit per microsecond.
//
// Every formula is exact integer arithmetic: a store must not let a product
// such as p × (W - e) lose precision (Lua numbers are doubles, exact only
// up to 2^53) or overflow.
//
// # Stores in several processes
//
// When Harness.Second is set, it is a second store instance (a second
// process) over the same state; the suite splits concurrent work between
// the two and checks that each sees the other's counts.
package limittest
