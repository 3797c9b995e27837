package flow

import (
	"context"
	"errors"
	"fmt"
	"time"
)

var (
	// ErrInvalidArgument is matched by errors for a bad argument, such as a
	// budget of 0 calls. It names the field and the rule.
	ErrInvalidArgument = errors.New("flow: invalid argument")
	// ErrOverCapacity is matched by Wait errors for n greater than the
	// budget's capacity: such a wait could never finish.
	ErrOverCapacity = errors.New("flow: n exceeds the budget's capacity")
	// ErrWouldExceedDeadline is matched by Wait errors returned at once
	// because the wait could not finish before the context's deadline. Such
	// errors also match context.DeadlineExceeded.
	ErrWouldExceedDeadline = errors.New("flow: wait would exceed the context deadline")
)

func invalidArg(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s %s", ErrInvalidArgument, field, fmt.Sprintf(format, args...))
}

func overCapacity(n, capacity int) error {
	return fmt.Errorf("%w: n=%d, capacity %d", ErrOverCapacity, n, capacity)
}

// deadlineError reports a wait that was refused because it could not finish
// in time; it matches both ErrWouldExceedDeadline and
// context.DeadlineExceeded so callers that only check the latter still see a
// deadline.
type deadlineError struct {
	wait, left time.Duration
}

func (e *deadlineError) Error() string {
	return fmt.Sprintf("flow: wait of %s would exceed the context deadline (%s left)", e.wait, e.left.Round(time.Millisecond))
}

func (e *deadlineError) Is(target error) bool {
	return target == ErrWouldExceedDeadline || target == context.DeadlineExceeded
}

// exceedsDeadline returns a *deadlineError when waiting wait would take the
// caller past ctx's deadline. The deadline is wall-clock time, so the time
// left is measured by the system clock even when the budget runs on an
// injected one.
func exceedsDeadline(ctx context.Context, wait time.Duration) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		return nil
	}
	if left := time.Until(deadline); wait > left {
		return &deadlineError{wait: wait, left: left}
	}
	return nil
}
