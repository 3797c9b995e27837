package ratelimit

import (
	"context"
	"time"
)

// Request asks a Store to count Cost against Limit under Key.
type Request struct {
	// Key is the logical key (see package keyspace). Must not be empty.
	Key string
	// Limit is the limit to count against.
	Limit Limit
	// Cost is what this request uses. 0 peeks without counting; negative is
	// invalid. A cost above Limit.Capacity() can never be admitted and is
	// refused with a *CostExceedsQuotaError.
	Cost int64
}

// Validate returns an ErrInvalidArgument error naming the field and the
// rule: an *InvalidArgumentError, or a *CostExceedsQuotaError when Cost is
// above Limit.Capacity().
func (r Request) Validate() error {
	if r.Key == "" {
		return invalidArg("Request.Key", "must not be empty")
	}
	if r.Cost < 0 {
		return invalidArg("Request.Cost", "must not be negative, got %d", r.Cost)
	}
	if err := r.Limit.Validate(); err != nil {
		return err
	}
	if r.Cost > r.Limit.Capacity() {
		return &CostExceedsQuotaError{Cost: r.Cost, Limit: r.Limit}
	}
	return nil
}

// ValidateRequests checks a Consume call's arguments: at least one request,
// each valid (so none costs more than its limit's capacity: the call could
// never pass), and no two with the same key and limit ID.
func ValidateRequests(reqs []Request) error {
	if len(reqs) == 0 {
		return invalidArg("requests", "must hold at least one request")
	}
	for i, r := range reqs {
		if err := r.Validate(); err != nil {
			return err
		}
		for _, o := range reqs[:i] {
			// Valid limits have equal IDs exactly when algorithm and
			// window match; comparing those avoids building two strings
			// per pair on every multi-limit call.
			if o.Key == r.Key && o.Limit.Algorithm == r.Limit.Algorithm && o.Limit.Window == r.Limit.Window {
				return invalidArg("requests", "hold key %q with limit %s twice", r.Key, r.Limit.ID())
			}
		}
	}
	return nil
}

// Result is one limit's part of a Decision.
type Result struct {
	// Limit is the limit that was counted.
	Limit Limit
	// Allowed reports whether this limit alone would admit the request.
	Allowed bool
	// Used is the cost counted against the limit after this decision.
	Used int64
	// Remaining is the cost still admitted now (never negative).
	Remaining int64
	// ResetAfter is when the limit is fully available again.
	ResetAfter time.Duration
	// RetryAfter is how long until the same request would be allowed; 0
	// when Allowed.
	RetryAfter time.Duration
}

// Decision is a Store's answer to a Consume call.
type Decision struct {
	// Allowed is true when every limit admitted the request; only then did
	// any counter move.
	Allowed bool
	// Results has one entry per Request, in order.
	Results []Result
	// RetryAfter is the longest RetryAfter of the denying limits.
	RetryAfter time.Duration
}

// Denied returns the result that denied the request with the longest
// RetryAfter, if any.
func (d Decision) Denied() (Result, bool) {
	var out Result
	found := false
	for _, r := range d.Results {
		if !r.Allowed && (!found || r.RetryAfter > out.RetryAfter) {
			out, found = r, true
		}
	}
	return out, found
}

// Tightest returns the result with the least Remaining: the one a client
// should be told about in RateLimit headers.
func (d Decision) Tightest() (Result, bool) {
	if r, ok := d.Denied(); ok {
		return r, true
	}
	if len(d.Results) == 0 {
		return Result{}, false
	}
	out := d.Results[0]
	for _, r := range d.Results[1:] {
		if r.Remaining < out.Remaining {
			out = r
		}
	}
	return out, true
}

// Store counts and decides. Implementations: memlimit, redislimit.
type Store interface {
	// Consume decides all requests in one atomic operation, all or
	// nothing: when any limit denies, no counter moves (denied calls do not
	// use quota). Requests with Cost 0 only peek. Invalid requests return
	// an error matching ErrInvalidArgument before the store is touched;
	// store faults return an error matching ErrStoreUnavailable.
	Consume(ctx context.Context, reqs ...Request) (Decision, error)
}

// Decide builds a Decision from per-limit results.
func Decide(results []Result) Decision {
	d := Decision{Allowed: true, Results: results}
	for _, r := range results {
		if !r.Allowed {
			d.Allowed = false
			if r.RetryAfter > d.RetryAfter {
				d.RetryAfter = r.RetryAfter
			}
		}
	}
	return d
}
