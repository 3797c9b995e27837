package server

import (
	"time"

	"github.com/sluicehq/sluice/queue"
)

// msBound is the range of every duration the API takes in milliseconds:
// up to queue.MaxDuration (100 years), the bound the queue itself holds
// every spec to. The server checks it on the milliseconds, before they
// become a time.Duration that a larger number would overflow.
var msBound = intBound{min: 0, max: queue.MaxDuration.Milliseconds(), note: " (100 years)"}

// pauseBound is a queue pause's duration_ms, whose 0 means "until
// resumed". Other routes' duration_ms (a tenant's or a group's back-off,
// where 0 resumes) take msBound, and so does a number too large to decode:
// the note belongs to this route alone.
var pauseBound = intBound{min: 0, max: msBound.max, note: " (100 years; 0 or absent pauses until resumed)"}

// fieldBounds are the ranges of the API's integer fields by JSON name, so
// that a number too large to decode is refused with the same words as
// one that decodes but is out of range.
var fieldBounds = map[string]intBound{
	"delay_ms": msBound, "retry_in_ms": msBound, "lease_ms": msBound, "timeout_ms": msBound,
	"unique_for_ms": msBound, "max_wait_ms": msBound, "ttl_ms": msBound, "min_interval_ms": msBound,
	"duration_ms":  msBound, // a queue pause says more: pauseBound
	"wait_ms":      {min: 0, max: MaxLeaseWait.Milliseconds()},
	"max":          {min: 1, max: MaxLeaseBatch},
	"priority":     {min: 0, max: queue.MaxPriority},
	"max_attempts": {min: 0, max: queue.MaxAttemptsLimit},
	"weight":       {min: 0, max: queue.MaxWeight},
}

// millis checks that ms, the value of the API field named field (its
// last part names its bound in fieldBounds, msBound when none), is a
// duration within its bound, and returns it as one.
func millis(field string, ms int64) (time.Duration, *problem) {
	b, ok := fieldBounds[leaf(field)]
	if !ok {
		b = msBound
	}
	if p := b.check(field, ms); p != nil {
		return 0, p
	}
	return time.Duration(ms) * time.Millisecond, nil
}
