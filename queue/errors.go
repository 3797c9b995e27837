package queue

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrNotFound means no job has the given id (it never existed or the
	// cleaner removed it).
	ErrNotFound = errors.New("queue: job not found")
	// ErrLeaseLost means a lease token no longer holds its job: the lease
	// expired and the job was rescued, the job was requeued, or it already
	// finished. The transition was not applied.
	ErrLeaseLost = errors.New("queue: lease lost")
	// ErrDuplicate means a job with the same queue and unique key already
	// holds the key; Client.Enqueue returns that job along with this error.
	ErrDuplicate = errors.New("queue: duplicate job")
	// ErrJobFinished means the job already completed or failed, so it
	// cannot be cancelled.
	ErrJobFinished = errors.New("queue: job already finished")
	// ErrInvalidArgument is matched by *InvalidArgumentError.
	ErrInvalidArgument = errors.New("queue: invalid argument")
	// ErrClosed means the backend was closed.
	ErrClosed = errors.New("queue: backend closed")
)

// InvalidArgumentError names the field and the rule it broke.
type InvalidArgumentError struct {
	Field string // such as "JobSpec.Queue"
	Rule  string // such as "must not be empty"
}

func (e *InvalidArgumentError) Error() string {
	return "queue: " + e.Field + " " + e.Rule
}

// Is makes errors.Is(err, ErrInvalidArgument) true.
func (e *InvalidArgumentError) Is(target error) bool { return target == ErrInvalidArgument }

// InvalidArgument returns an *InvalidArgumentError, so that every
// validation error reads the same.
func InvalidArgument(field, format string, args ...any) error {
	return &InvalidArgumentError{Field: field, Rule: fmt.Sprintf(format, args...)}
}

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
