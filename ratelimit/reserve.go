package ratelimit

import (
	"context"
	"time"
)

// Reservation is a Reserver's answer.
type Reservation struct {
	// Decision is the decision with its costs counted when Allowed. A
	// reservation that needs a delay reports its token buckets as allowed.
	Decision Decision
	// Delay is how long after the decision the caller may proceed; 0 when
	// it may proceed at once. Only token buckets delay: their next free
	// slot is computable (GCRA) and is reserved for the caller.
	Delay time.Duration
}

// Reserver is a Store that can also reserve a later slot instead of
// refusing, and give back cost a caller did not use. memlimit and
// redislimit implement it.
type Reserver interface {
	// Reserve decides reqs like Consume, except that a token bucket may
	// admit its cost at a later time: the store computes the earliest
	// time every token bucket admits the call (Delay) and, when Delay is at
	// most maxWait and every window limit admits the call now, counts all
	// of it at once. Otherwise nothing is counted and the Decision denies,
	// its RetryAfter the delay that would have been needed (for token
	// buckets) or the window's RetryAfter.
	Reserve(ctx context.Context, maxWait time.Duration, reqs ...Request) (Reservation, error)
	// Refund gives back cost counted earlier, as far as the counters still
	// hold it: a token bucket's arrival time moves back (not before now),
	// a window's count drops if the window is still the current one. It is
	// how a reservation abandoned by a cancelled caller is returned.
	Refund(ctx context.Context, reqs ...Request) error
}

// ReserveDelay is the delay a token bucket of limit l, reporting
// resetAfter on a peek, needs before it admits cost: the GCRA arrival
// time of the cost less the bucket's tolerance. Stores share it so that
// their reservations agree.
func ReserveDelay(l Limit, resetAfter time.Duration, cost int64) time.Duration {
	w := l.Window.Microseconds()
	t := (w + l.Quota - 1) / l.Quota
	us := resetAfter.Microseconds() + cost*t - l.Capacity()*t
	if us <= 0 {
		return 0
	}
	return time.Duration(us) * time.Microsecond
}
