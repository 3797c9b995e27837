package ratelimit

import (
	"context"
	"time"
)

// LeaseRequest asks an Admitter for one in-flight lease under Key.
type LeaseRequest struct {
	// Key is the logical key of the in-flight counter. Must not be empty.
	Key string
	// InFlight is the limit to hold the lease under.
	InFlight InFlight
}

// RequestGroup is a set of window requests decided all or nothing, with an
// optional second choice: when Requests do not all admit their costs,
// Fallback is tried in their place, on the counters as they were before
// the call. A group lets a caller say "take this from the reserve if you
// may, else from the shared part": the two sets usually name the same
// counter under different capacities.
type RequestGroup struct {
	// Requests are the first choice. Must not be empty.
	Requests []Request
	// Fallback is the second choice; empty means none.
	Fallback []Request
}

// AdmitRequest asks an Admitter to decide gates, in-flight leases and
// groups of window requests in one atomic, all-or-nothing step.
type AdmitRequest struct {
	// Gates are logical keys of gates (see Admitter.CloseUntil): while any
	// of them is closed, nothing is admitted.
	Gates []string
	// Leases are the in-flight leases to take; each key must have room.
	Leases []LeaseRequest
	// Groups are the window requests; each must admit its first choice or
	// its fallback.
	Groups []RequestGroup
}

// Validate returns an ErrInvalidArgument error naming the field and the
// rule when r cannot be decided: it must name something to decide, keys
// must not be empty or repeated, every group's choices must be valid
// request sets, and no counter may appear in two groups.
func (r AdmitRequest) Validate() error {
	if len(r.Gates)+len(r.Leases)+len(r.Groups) == 0 {
		return invalidArg("AdmitRequest", "must name at least one gate, lease or group")
	}
	for i, g := range r.Gates {
		if g == "" {
			return invalidArg("AdmitRequest.Gates", "must not hold an empty key")
		}
		for _, o := range r.Gates[:i] {
			if o == g {
				return invalidArg("AdmitRequest.Gates", "hold key %q twice", g)
			}
		}
	}
	for i, l := range r.Leases {
		if err := (AcquireRequest{Key: l.Key, InFlight: l.InFlight}).Validate(); err != nil {
			return err
		}
		for _, o := range r.Leases[:i] {
			if o.Key == l.Key {
				return invalidArg("AdmitRequest.Leases", "hold key %q twice", l.Key)
			}
		}
	}
	var firsts []Request
	for _, g := range r.Groups {
		if err := ValidateRequests(g.Requests); err != nil {
			return err
		}
		if len(g.Fallback) > 0 {
			if err := ValidateRequests(g.Fallback); err != nil {
				return err
			}
		}
		firsts = append(firsts, g.Requests...)
	}
	if len(firsts) > 0 {
		// Across groups a counter may appear once: two groups moving one
		// counter would each be judged without the other's cost.
		return ValidateRequests(firsts)
	}
	return nil
}

// GroupResult is one RequestGroup's part of an Admission.
type GroupResult struct {
	// Fallback is true when the group was decided by its fallback: it was
	// admitted by it, or (when denied) the fallback is the choice that
	// would be admitted sooner.
	Fallback bool
	// Results has one entry per request of the choice named by Fallback,
	// in order: after the cost was counted when the admission was allowed,
	// else as the counters stand, each Allowed and RetryAfter judged for
	// its cost.
	Results []Result
	// RetryAfter is how long until the group could be admitted given no
	// other traffic: 0 when its choice admits now.
	RetryAfter time.Duration
}

// Admission is an Admitter's answer.
type Admission struct {
	// Allowed is true when every gate was open, every lease had room and
	// every group admitted a choice; only then did anything move.
	Allowed bool
	// Gates has, per gate, how long it stays closed (0 when open).
	Gates []time.Duration
	// Leases has the granted leases, one per LeaseRequest, when Allowed.
	Leases []Lease
	// Held has, per LeaseRequest, how many leases its key holds after the
	// decision.
	Held []int64
	// LeaseRetry has, per LeaseRequest, how long until its earliest lease
	// expires when its key is full (0 when it had room).
	LeaseRetry []time.Duration
	// Groups has one entry per RequestGroup, in order.
	Groups []GroupResult
	// RetryAfter is the longest wait any part reports: when the call could
	// be admitted given no other traffic and no early release.
	RetryAfter time.Duration
}

// Admitter is a Store that decides whole admissions (gates, several
// in-flight leases and groups of window requests with fallbacks) in one
// atomic step, and can close a gate and charge cost beyond a limit:
// what package budget builds on. memlimit and redislimit implement it.
type Admitter interface {
	Store
	Acquirer
	Reserver
	// Admit decides r all or nothing: when any gate is closed, any lease
	// key is full or any group admits neither choice, nothing moves.
	// Expired leases are dropped first.
	Admit(ctx context.Context, r AdmitRequest) (Admission, error)
	// Charge counts every request's cost whether or not its limit admits
	// it, in one atomic step, and returns the counters as they stand
	// after (each result a peek). What is over the limit is carried as
	// follows: a token bucket's arrival time moves past its tolerance, so
	// it denies until the excess has drained at its rate (a debt repaid
	// over time); a fixed or sliding window counts above its quota until
	// its window ends, then forgets the excess.
	Charge(ctx context.Context, reqs ...Request) (Decision, error)
	// CloseUntil closes the gate key until the time until; a gate already
	// closed longer stays so (a close never shortens another). It reports
	// when the gate opens.
	CloseUntil(ctx context.Context, key string, until time.Time) (time.Time, error)
	// ClosedFor reports how long the gate key stays closed (0 when open).
	ClosedFor(ctx context.Context, key string) (time.Duration, error)
}

// ChooseGroup decides one group from its judged results (each Allowed and
// RetryAfter for its cost): the first choice when it admits, else the
// fallback when it admits, else whichever would admit sooner. Stores share
// it so that their admissions agree. first reports the choice and retry
// the group's RetryAfter.
func ChooseGroup(pref, fb []Result) (first bool, retry time.Duration) {
	p := Decide(pref)
	if p.Allowed || len(fb) == 0 {
		return true, p.RetryAfter
	}
	f := Decide(fb)
	if f.Allowed || f.RetryAfter < p.RetryAfter {
		return false, f.RetryAfter
	}
	return true, p.RetryAfter
}
