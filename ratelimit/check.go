package ratelimit

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Verdict is Allow's answer together with what led to it, for callers that
// report the decision as well as act on it (the HTTP middleware writes it
// into RateLimit headers and picks 429 or 503 from it).
type Verdict struct {
	// Allowed is the answer Allow gives: after shadow mode and failure mode.
	Allowed bool
	// Policy is the policy the input was counted under.
	Policy string
	// Decision is the store's decision; empty when the store failed.
	Decision Decision
	// Fault is the store fault that the failure mode answered; nil when the
	// store decided.
	Fault error
	// Shadow reports that the scene is in shadow mode: Allowed is true even
	// when Decision denies.
	Shadow bool
}

// Check is Allow with its reasons: it counts in once, applies shadow mode
// and the failure mode exactly as Allow does (logging and observing the
// same way) and returns the Verdict. An invalid argument is returned as an
// error and never masked.
func (l *Limiter[T]) Check(ctx context.Context, in T) (Verdict, error) {
	start := time.Now()
	d, policy, err := l.consume(ctx, in)
	v := Verdict{Policy: policy, Decision: d, Shadow: l.def.Shadow}
	ev := Event{Scene: l.def.Scene, Policy: policy, Decision: d, Err: err, Latency: time.Since(start), Shadow: l.def.Shadow}
	defer func() {
		ev.Allowed = v.Allowed
		if l.opts.observer != nil {
			l.opts.observer(ev)
		}
	}()
	switch {
	case errors.Is(err, ErrInvalidArgument):
		return v, err
	case err != nil:
		ev.FailureModeApplied = true
		v.Fault = err
		v.Allowed = l.def.FailureMode == FailOpen
		if ok, held := l.faults.allow(time.Now()); ok {
			l.opts.logger.LogAttrs(ctx, slog.LevelWarn, "ratelimit: store fault, applying failure mode",
				slog.String("scene", l.def.Scene), slog.String("policy", policy),
				slog.String("failure_mode", l.def.FailureMode.String()), slog.Any("error", err),
				slog.Int64("faults_not_logged", held))
		}
		return v, nil
	case !d.Allowed && l.def.Shadow:
		v.Allowed = true
		l.opts.logger.LogAttrs(ctx, slog.LevelInfo, "ratelimit: shadow denial",
			slog.String("scene", l.def.Scene), slog.String("policy", policy),
			slog.Duration("retry_after", d.RetryAfter))
		return v, nil
	}
	v.Allowed = d.Allowed
	return v, nil
}
