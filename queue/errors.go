package queue

import (
	"errors"
	"fmt"
	"time"
)

// PartialError is an Enqueue whose specs went to several backends (a
// router, package queue/mux) and that stored the specs of some before
// another failed. What was stored stays stored: resend only the rest.
type PartialError struct {
	// Results has one entry per spec, in order: the outcome of the specs
	// stored, and a zero Enqueued (Job nil) for the rest.
	Results []Enqueued
	// Route names the backend that failed as the router names it (see
	// queue/mux's Route.Name); empty for the router's default backend.
	Route string
	// Err is that backend's error.
	Err error
}

func (e *PartialError) Error() string {
	stored := 0
	for _, r := range e.Results {
		if r.Job != nil {
			stored++
		}
	}
	where := "the default backend"
	if e.Route != "" {
		where = fmt.Sprintf("route %q", e.Route)
	}
	return fmt.Sprintf("queue: %d of %d jobs stored, then %s failed: %v", stored, len(e.Results), where, e.Err)
}

// Unwrap returns the backend's error.
func (e *PartialError) Unwrap() error { return e.Err }

// permanentError marks an error as not worth retrying.
type permanentError struct{ err error }

func (e *permanentError) Error() string {
	if e.err == nil {
		return "queue: permanent failure"
	}
	return e.err.Error()
}
func (e *permanentError) Unwrap() error { return e.err }

// Permanent wraps err so that, returned by a handler, it fails the job for
// good: no more attempts, whatever MaxAttempts says. errors.Is and
// errors.As still see err.
func Permanent(err error) error { return &permanentError{err: err} }

// IsPermanent reports whether err (or an error it wraps) was made by
// Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// SnoozeError is returned by Snooze: the handler asks to run the job again
// after Delay without spending an attempt.
type SnoozeError struct {
	Delay time.Duration
}

func (e *SnoozeError) Error() string { return fmt.Sprintf("queue: snoozed for %s", e.Delay) }

// Snooze returns an error that, returned by a handler, puts the job back to
// run again after d without spending an attempt (the job is scheduled, or
// pending at once when d <= 0). A job that snoozes forever runs forever:
// bound it in the handler (for example by a deadline in the payload).
func Snooze(d time.Duration) error { return &SnoozeError{Delay: d} }
