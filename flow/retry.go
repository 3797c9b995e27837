package flow

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/sluicehq/sluice/clock"
)

// Retry defaults, used for the zero fields of a Policy.
const (
	DefaultAttempts   = 3
	DefaultBackoff    = time.Second
	DefaultMaxBackoff = 30 * time.Second
	DefaultMultiplier = 2.0
	DefaultJitter     = 0.5
)

// Policy says how Retry repeats a call. The zero value is a useful default:
// 3 attempts, waits of about 1s then 2s (half of each wait random), no
// budget.
type Policy struct {
	// Attempts is how many calls at most, the first included. 0 means 3;
	// 1 means no retries.
	Attempts int
	// Backoff is the wait before the first retry. 0 means 1s.
	Backoff time.Duration
	// MaxBackoff caps each computed wait. 0 means 30s. A server's
	// Retry-After is not capped (see Retry).
	MaxBackoff time.Duration
	// Multiplier grows the wait after each retry. 0 (or less than 1) means
	// 2.
	Multiplier float64
	// Jitter is the fraction of each wait that is random: the wait is drawn
	// uniformly from [w×(1−Jitter), w], so many clients that failed together
	// do not retry together. 0 means 0.5; a negative value disables jitter;
	// values above 1 mean 1.
	Jitter float64
	// Budget, when set, is waited on for one call before every attempt,
	// the first included: retries cost budget like any other call.
	Budget Limiter
	// Retryable classifies an error that is not Permanent: false stops
	// retrying and returns it. Nil means every error is retried.
	Retryable func(error) bool
	// OnRetry, when set, is called before each wait with the attempt that
	// failed (1-based), its error and the wait about to start.
	OnRetry func(attempt int, err error, wait time.Duration)
	// Clock is where waits are timed; nil means the system clock.
	Clock clock.Clock
}

func (p Policy) withDefaults() Policy {
	if p.Attempts <= 0 {
		p.Attempts = DefaultAttempts
	}
	if p.Backoff <= 0 {
		p.Backoff = DefaultBackoff
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = DefaultMaxBackoff
	}
	if p.Multiplier < 1 {
		p.Multiplier = DefaultMultiplier
	}
	switch {
	case p.Jitter == 0:
		p.Jitter = DefaultJitter
	case p.Jitter < 0:
		p.Jitter = 0
	case p.Jitter > 1:
		p.Jitter = 1
	}
	p.Clock = clock.Or(p.Clock)
	return p
}

// backoff returns the wait after the given failed attempt (1-based), with
// jitter applied: what Retry sleeps when the error carries no Retry-After.
func (p Policy) backoff(attempt int) time.Duration {
	w := float64(p.Backoff) * math.Pow(p.Multiplier, float64(attempt-1))
	w = min(w, float64(p.MaxBackoff))
	if p.Jitter > 0 {
		w -= w * p.Jitter * rand.Float64()
	}
	return time.Duration(w)
}

// permanentError stops Retry.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as not worth retrying: Retry returns err (unwrapped
// from the mark) at once. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// RetryAfterError is an error that says how long to wait before the next
// attempt, such as a 429 response's Retry-After header.
type RetryAfterError struct {
	// After is how long the server asked to wait.
	After time.Duration
	// Err is the failure.
	Err error
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("%v (retry after %s)", e.Err, e.After)
}

// Unwrap returns the failure.
func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter returns After, so RetryAfterError satisfies the interface
// Retry looks for.
func (e *RetryAfterError) RetryAfter() time.Duration { return e.After }

// RetryAfter wraps err with the wait the server asked for. Retry waits
// exactly d (no jitter, no cap) before the next attempt. RetryAfter(nil, d)
// is nil.
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &RetryAfterError{After: d, Err: err}
}

// retryAfter finds a server-requested wait in err: any error in the chain
// with a RetryAfter() time.Duration method, such as *RetryAfterError or
// *ratelimit.LimitedError.
func retryAfter(err error) (time.Duration, bool) {
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) {
		if d := ra.RetryAfter(); d > 0 {
			return d, true
		}
	}
	return 0, false
}

// Retry calls fn until it succeeds, up to p.Attempts times, and returns nil
// or the reason it stopped:
//   - fn's error marked Permanent, or one p.Retryable rejects: that error,
//     at once (unwrapped from Permanent);
//   - attempts used up: the last error, wrapped with the attempt count;
//   - ctx ends, or the next wait would outlast ctx's deadline: an error
//     matching both ctx's error (or ErrWouldExceedDeadline) and the last
//     error; sleeps end as soon as ctx does;
//   - the budget refuses (see Limiter.Wait): the budget's error.
//
// Between attempts it waits p's exponential backoff, or exactly the
// server's wait when the error carries one (see RetryAfter). With p.Budget
// set, every attempt first waits for one call from it. A panic in fn is
// returned as a *PanicError and not retried.
func Retry(ctx context.Context, p Policy, fn func(context.Context) error) error {
	_, err := RetryValue(ctx, p, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, fn(ctx)
	})
	return err
}

// RetryValue is Retry for a function that returns a value: the value of the
// successful attempt, or of the last attempt with the error.
func RetryValue[T any](ctx context.Context, p Policy, fn func(context.Context) (T, error)) (T, error) {
	p = p.withDefaults()
	var (
		v   T
		err error
	)
	for attempt := 1; ; attempt++ {
		if p.Budget != nil {
			if berr := p.Budget.Wait(ctx, 1); berr != nil {
				return v, stopped(berr, err)
			}
		}
		v, err = protect(ctx, -1, fn, call0[T])
		if err == nil {
			return v, nil
		}
		if final, done := p.final(ctx, attempt, err); done {
			return v, final
		}
		wait, honoured := retryAfter(err)
		if !honoured {
			wait = p.backoff(attempt)
		}
		if p.OnRetry != nil {
			p.OnRetry(attempt, err, wait)
		}
		if serr := exceedsDeadline(ctx, wait); serr != nil {
			return v, stopped(serr, err)
		}
		if serr := sleep(ctx, p.Clock, wait); serr != nil {
			return v, stopped(serr, err)
		}
	}
}

// final decides whether err ends the retries, and with which error.
func (p Policy) final(ctx context.Context, attempt int, err error) (error, bool) {
	var pe *permanentError
	var panicked *PanicError
	switch {
	case errors.As(err, &pe):
		return pe.err, true
	case errors.As(err, &panicked):
		return err, true
	case ctx.Err() != nil:
		return stopped(ctx.Err(), err), true
	case p.Retryable != nil && !p.Retryable(err):
		return err, true
	case attempt >= p.Attempts:
		return fmt.Errorf("flow: gave up after %d attempts: %w", attempt, err), true
	}
	return nil, false
}

// stopped is the error of a retry loop ended by its context or budget: it
// matches both why it stopped and the last attempt's error.
func stopped(why, last error) error {
	if last == nil {
		return why
	}
	return fmt.Errorf("flow: retry stopped: %w; last error: %w", why, last)
}

// call0 adapts a no-argument function to protect's item form.
func call0[T any](ctx context.Context, fn func(context.Context) (T, error)) (T, error) {
	return fn(ctx)
}

// sleep waits d on c, returning early with ctx's error when ctx ends.
func sleep(ctx context.Context, c clock.Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
