package ratelimit

import "context"

// PartialConsumer is a Store that can also grant part of a cost: for batch
// senders that take what is left rather than all or nothing. memlimit and
// redislimit implement it.
type PartialConsumer interface {
	// ConsumeAtMost counts up to the requests' Cost (the same in every
	// request) against every limit, as much as all of them admit now, in
	// one atomic step, and returns how much it granted. The Decision is
	// allowed when something was granted (or the cost was 0, a peek); a
	// denial's RetryAfter is when a cost of 1 would pass.
	ConsumeAtMost(ctx context.Context, reqs ...Request) (Decision, int64, error)
}

// ValidateAtMost checks a ConsumeAtMost call's arguments: like
// ValidateRequests, except that a cost above a limit's capacity is allowed
// (at most the capacity is granted), and every request has the same cost.
func ValidateAtMost(reqs []Request) error {
	if len(reqs) == 0 {
		return invalidArg("requests", "must hold at least one request")
	}
	clamped := make([]Request, len(reqs))
	for i, r := range reqs {
		if r.Cost != reqs[0].Cost {
			return invalidArg("Request.Cost", "must be the same in every request of a partial grant, got %d and %d", reqs[0].Cost, r.Cost)
		}
		if err := r.Limit.Validate(); err == nil && r.Cost > r.Limit.Capacity() {
			r.Cost = r.Limit.Capacity()
		}
		clamped[i] = r
	}
	return ValidateRequests(clamped)
}

// Resetter is a Store whose counters an operator can reset. memlimit and
// redislimit implement it.
type Resetter interface {
	// Reset forgets the counters of key for each of limits and every
	// in-flight lease held under key, and reports how many it removed.
	Reset(ctx context.Context, key string, limits ...Limit) (int, error)
}
