package ratelimit

import (
	"context"
	"strconv"
	"time"
)

// InFlight limits how many calls run at once, rather than how many start
// per window: "at most 5 exports running per team". A call takes a Lease
// (Acquire) and gives it back (Release); a lease not given back frees its
// slot by itself when its TTL ends, so a crashed holder cannot keep a slot
// for ever.
type InFlight struct {
	// Max is how many leases may be held at once. Must be positive.
	Max int64
	// TTL is how long a lease lasts unless released first: longer than the
	// work it guards. At least 1 ms, in whole milliseconds.
	TTL time.Duration
}

// Validate returns an ErrInvalidArgument error naming the field and the
// rule when f cannot be used.
func (f InFlight) Validate() error {
	switch {
	case f.Max <= 0:
		return invalidArg("InFlight.Max", "must be a positive integer, got %d", f.Max)
	case f.TTL < time.Millisecond:
		return invalidArg("InFlight.TTL", "must be at least 1ms, got %s", f.TTL)
	case f.TTL%time.Millisecond != 0:
		return invalidArg("InFlight.TTL", "must be a whole number of milliseconds, got %s", f.TTL)
	}
	return nil
}

// String describes the limit, such as "5 in flight (lease 30s)".
func (f InFlight) String() string {
	return strconv.FormatInt(f.Max, 10) + " in flight (lease " + f.TTL.String() + ")"
}

// AcquireRequest asks an Acquirer for one lease under Key, decided
// together with window requests in one atomic, all-or-nothing step.
type AcquireRequest struct {
	// Key is the logical key of the in-flight counter (see package
	// keyspace). Must not be empty.
	Key string
	// InFlight is the limit to hold the lease under.
	InFlight InFlight
	// Requests are window limits decided in the same step: the lease is
	// granted only when every one of them admits its cost, and they count
	// only when the lease is granted. May be empty.
	Requests []Request
}

// Validate returns an ErrInvalidArgument error when r cannot be decided.
func (r AcquireRequest) Validate() error {
	if r.Key == "" {
		return invalidArg("AcquireRequest.Key", "must not be empty")
	}
	if err := r.InFlight.Validate(); err != nil {
		return err
	}
	if len(r.Requests) == 0 {
		return nil
	}
	return ValidateRequests(r.Requests)
}

// Lease is one held in-flight slot.
type Lease struct {
	// Key is the in-flight counter's logical key.
	Key string
	// ID names the lease among the key's holders; Release takes it.
	ID string
	// TTL is how long after it was granted the lease frees itself.
	TTL time.Duration
}

// Acquisition is an Acquirer's answer.
type Acquisition struct {
	// Allowed is true when the lease was granted; only then did any window
	// counter move.
	Allowed bool
	// Lease is the granted lease; zero when denied.
	Lease Lease
	// Held is how many leases are held under the key after the decision.
	Held int64
	// InFlightAllowed reports whether the in-flight limit alone had room.
	InFlightAllowed bool
	// Decision holds the window requests' results, in order. When the
	// in-flight limit was full they are peeks: nothing was counted.
	Decision Decision
	// RetryAfter is how long until the call could be admitted given no
	// other traffic: until the earliest lease expires when the in-flight
	// limit is full, else the window decision's RetryAfter.
	RetryAfter time.Duration
}

// Acquirer is a Store that also holds in-flight leases. memlimit and
// redislimit implement it.
type Acquirer interface {
	// Acquire grants a lease when fewer than InFlight.Max live leases are
	// held under the key and every window request admits its cost, all in
	// one atomic step. Expired leases are dropped first.
	Acquire(ctx context.Context, r AcquireRequest) (Acquisition, error)
	// Release gives a lease back before its TTL ends. It reports false when
	// the lease was no longer held (released already or expired).
	Release(ctx context.Context, l Lease) (bool, error)
	// Held reports how many live leases are held under key.
	Held(ctx context.Context, key string) (int64, error)
}
