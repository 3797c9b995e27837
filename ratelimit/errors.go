package ratelimit

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrLimited is matched by *LimitedError: the request is over a limit.
	ErrLimited = errors.New("ratelimit: limited")
	// ErrInvalidArgument is matched by errors for a bad limit, cost, key or
	// definition. It is a programmer error and is never masked by a
	// failure mode.
	ErrInvalidArgument = errors.New("ratelimit: invalid argument")
	// ErrStoreUnavailable is matched by store faults: the store could not
	// be reached or did not answer in time. Failure modes apply to it.
	ErrStoreUnavailable = errors.New("ratelimit: store unavailable")
	// ErrCostExceedsQuota is matched by *CostExceedsQuotaError: a request
	// costs more than its limit admits in a whole window (the quota, or a
	// token bucket's burst), so no wait would ever let it pass. Errors
	// matching it also match ErrInvalidArgument, so no failure mode masks
	// them; they must not be answered like a denial, whose RetryAfter
	// promises a later success.
	ErrCostExceedsQuota = errors.New("ratelimit: cost exceeds quota")
)

// InvalidArgumentError names the field and the rule it broke.
type InvalidArgumentError struct {
	Field string // such as "Limit.Quota" or "Request.Cost"
	Rule  string // such as "must be a positive integer, got 0"
}

func (e *InvalidArgumentError) Error() string {
	return "ratelimit: " + e.Field + " " + e.Rule
}

// Is makes errors.Is(err, ErrInvalidArgument) true.
func (e *InvalidArgumentError) Is(target error) bool { return target == ErrInvalidArgument }

func invalidArg(field, format string, args ...any) error {
	return &InvalidArgumentError{Field: field, Rule: fmt.Sprintf(format, args...)}
}

// InvalidArgument returns an *InvalidArgumentError; stores use it so every
// validation error reads the same.
func InvalidArgument(field, format string, args ...any) error {
	return invalidArg(field, format, args...)
}

// CostExceedsQuotaError is the error for a request whose Cost is above its
// Limit's Capacity. A decision is all or nothing, so one such request makes
// the whole call impossible, whatever room its other limits have; the
// error names the first one.
type CostExceedsQuotaError struct {
	Cost  int64 // the request's cost
	Limit Limit // the limit it can never fit in
}

func (e *CostExceedsQuotaError) Error() string {
	what := "quota"
	if e.Limit.Capacity() != e.Limit.Quota {
		what = "burst"
	}
	return fmt.Sprintf("ratelimit: Request.Cost %d exceeds the %s %d of limit %s, so it can never be admitted",
		e.Cost, what, e.Limit.Capacity(), e.Limit)
}

// Is makes errors.Is(err, ErrCostExceedsQuota) and errors.Is(err,
// ErrInvalidArgument) true.
func (e *CostExceedsQuotaError) Is(target error) bool {
	return target == ErrCostExceedsQuota || target == ErrInvalidArgument
}

// StoreError wraps a store fault so that it matches ErrStoreUnavailable
// while keeping the cause.
type StoreError struct {
	Op  string // what the store was doing, such as "consume"
	Err error  // the cause
}

func (e *StoreError) Error() string { return "ratelimit: store " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *StoreError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrStoreUnavailable) true.
func (e *StoreError) Is(target error) bool { return target == ErrStoreUnavailable }

// LimitedError is returned by Limiter.Assert when a request is over a limit.
type LimitedError struct {
	Scene    string
	Policy   string
	Decision Decision
}

func (e *LimitedError) Error() string {
	msg := fmt.Sprintf("ratelimit: %s/%s limited", e.Scene, e.Policy)
	if r, ok := e.Decision.Denied(); ok {
		msg += fmt.Sprintf(": %d every %s", r.Limit.Quota, r.Limit.Window)
	}
	if ra := e.RetryAfter(); ra > 0 {
		msg += fmt.Sprintf(", retry after %s", ra)
	}
	return msg
}

// Is makes errors.Is(err, ErrLimited) true.
func (e *LimitedError) Is(target error) bool { return target == ErrLimited }

// RetryAfter is how long to wait before the same request can be allowed.
func (e *LimitedError) RetryAfter() time.Duration { return e.Decision.RetryAfter }
