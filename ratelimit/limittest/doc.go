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
//
// Invalid arguments (see ratelimit.ValidateRequests) return an error
// matching ratelimit.ErrInvalidArgument before the store is touched. A
// context that is already done returns an error matching ctx.Err() and
// moves nothing.
//
// A request whose cost is above its limit's Limit.Capacity() could never
// be allowed, however long the caller waited; and because a decision is
// all or nothing, neither could any call holding it. Such a call is not
// denied but refused: Consume returns a *ratelimit.CostExceedsQuotaError
// (matching ratelimit.ErrCostExceedsQuota and ratelimit.ErrInvalidArgument)
// naming the first such request, and moves nothing. A denial always comes
// with a RetryAfter after which the request can pass; this refusal never
// does, so a client that honours RetryAfter cannot loop on it.
//
// In the formulas below, Allowed is the limit's own verdict
// (Result.Allowed); "the decision is allowed" means every limit of the call
// admitted its request.
//
// # Fixed window (ratelimit.FixedWindow)
//
// A counter's window starts at the first call it counts, not at a clock
// boundary: when a decision is allowed and counts cost n > 0 on a counter
// that holds no current window, a window [s, s+W) starts at s = t. The
// window is current while t < s + W; after that the counter holds nothing
// until the next counted call starts a new window. Peeks and denied
// decisions neither start nor extend a window. So a limit of 1 per W never
// admits two calls less than W apart. Let c be the cost counted in the
// current window (0 without one), and s its start (s = t for the window a
// decision starts).
//
//	Allowed    = c + n <= Q
//	Used       = c + n if the decision is allowed, else c
//	Remaining  = max(0, Q - Used)
//	ResetAfter = s + W - t if Used > 0, else 0
//	RetryAfter = s + W - t when this limit denies
//
// # Sliding window (ratelimit.SlidingWindow)
//
// The sliding window estimates the cost counted over the last W from two
// sub-windows aligned to multiples of W since the Unix epoch: the window
// of t starts at s = t - t mod W. (Where the sub-windows start does not
// change what the estimate bounds, so unlike the fixed window they stay
// aligned, and cost no more state.) Let c be the cost counted in the
// current sub-window, p the cost counted in the one just before it (0
// when older), and e = t - s the time elapsed in the current one. The
// estimate weights the previous sub-window by the part of it still inside
// the sliding window, rounding up, never in the caller's favour:
//
//	E          = ceil(p × (W - e) / W) + c
//	Allowed    = E + n <= Q
//	Used       = E + n if the decision is allowed, else E
//	Remaining  = max(0, Q - Used)
//	ResetAfter = s + 2W - t if c > 0 after the decision,
//	             else s + W - t if p > 0, else 0
//
// Rounding up makes Allowed the exact comparison
// p × (W - e) / W + c + n <= Q, so a limit of 1 per W never admits two
// calls less than W apart either: a call counted in the previous
// sub-window weighs more than 0 until that sub-window has left the
// sliding window entirely.
//
// When this limit denies, RetryAfter is the smallest whole-microsecond
// d > 0 for which the estimate at t + d, with no other traffic, admits n.
// Within the current sub-window that needs
// ceil(p × (W - e1) / W) <= A with A = Q - n - c >= 0, first true at
// e1 = W - floor(A × W / p); when A >= 0 and e1 < W, d = e1 - e.
// Otherwise it falls in the next sub-window, where p becomes c and c
// becomes 0: with e2 = max(0, W - floor((Q - n) × W / c)) (0 when c is
// 0), d = s + W - t + e2.
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
//	RetryAfter = new - t - τ when this limit denies
//
// So a fresh bucket admits C at once and then one unit of cost every T.
// A token bucket cannot admit more than one unit per microsecond.
//
// Every formula is exact integer arithmetic: a store must not let a product
// such as p × (W - e), or a quotient of two, lose precision (Lua numbers
// are doubles, exact only up to 2^53) or overflow.
//
// # Admissions, charges and gates (ratelimit.Admitter)
//
// Admit judges every request of every group for its cost on the counters
// as they stand (as a decision that counts nothing would), chooses each
// group's first choice when it admits, else its fallback when that
// admits, else whichever would admit sooner (ratelimit.ChooseGroup), and
// counts the chosen requests and takes the leases only when every gate is
// open, every lease key has room and every group admits. Charge counts
// with no ceiling: a token bucket's tat' = max(tat, t) + n × T (the debt
// drains at the bucket's rate); a fixed window adds n to its current
// window, starting one at t if none; a sliding window adds n to its
// current sub-window. A gate closed until u holds every admission naming
// it while t < u; a close never moves u earlier.
//
// # Stores in several processes
//
// When Harness.Second is set, it is a second store instance (a second
// process) over the same state; the suite splits concurrent work between
// the two and checks that each sees the other's counts.
package limittest
