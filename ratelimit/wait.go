package ratelimit

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/sluicehq/sluice/clock"
)

// Waited is WaitFor's answer.
type Waited struct {
	Verdict
	// Waited is how long the call waited before it was answered.
	Waited time.Duration
}

// Wait blocks until in may proceed and counts it, or returns at once when
// it could not proceed before ctx's deadline (without a deadline it waits as
// long as it takes). It returns nil when in may proceed, the definition's
// error (default *LimitedError) when the wait would be too long, ctx's
// error when ctx ends while waiting, or an ErrInvalidArgument error. Store
// faults are answered by the failure mode, as Assert does.
func (l *Limiter[T]) Wait(ctx context.Context, in T) error {
	maxWait := time.Duration(math.MaxInt64)
	if dl, ok := ctx.Deadline(); ok {
		maxWait = dl.Sub(l.opts.clock.Now())
	}
	w, err := l.WaitFor(ctx, in, maxWait)
	if err != nil || w.Allowed {
		return err
	}
	if l.def.Error != nil {
		return l.def.Error(in, w.Decision)
	}
	return &LimitedError{Scene: l.def.Scene, Policy: w.Policy, Decision: w.Decision}
}

// WaitFor is Wait with the longest acceptable wait given as maxWait (0 is
// Check) and the verdict returned, as nginx's limit_req with burst and
// delay. Token-bucket limits reserve the earliest slot that admits the
// call (GCRA makes it computable), so a waiting caller keeps its place;
// window limits are asked again when their RetryAfter has passed, so a
// waiting caller may be overtaken there. When ctx ends during the wait,
// the reservation is given back (Refund) and ctx's error returned.
func (l *Limiter[T]) WaitFor(ctx context.Context, in T, maxWait time.Duration) (Waited, error) {
	if l.def.Shadow || maxWait <= 0 {
		v, err := l.Check(ctx, in)
		return Waited{Verdict: v}, err
	}
	p, err := l.plan(ctx, in)
	switch {
	case err != nil && !errors.Is(err, ErrInvalidArgument):
		return Waited{Verdict: l.fault(ctx, p.policy, err)}, nil
	case err != nil || p.unlimited:
		return Waited{Verdict: Verdict{Allowed: p.unlimited, Policy: p.policy, Decision: p.decision()}}, err
	}
	rs, ok := Facet[Reserver](l.store)
	if !ok {
		return Waited{}, invalidArg("store", "%T does not reserve", l.store)
	}
	return l.waitLoop(ctx, rs, p, maxWait)
}

func (l *Limiter[T]) waitLoop(ctx context.Context, rs Reserver, p plan, maxWait time.Duration) (Waited, error) {
	clk := l.opts.clock
	start := clk.Now()
	for {
		left := maxWait - clk.Now().Sub(start)
		t0 := time.Now()
		sctx, cancel := l.storeCtx(ctx)
		res, err := rs.Reserve(sctx, max(left, 0), p.reqs...)
		cancel()
		err = wrapFault("reserve", err)
		l.observe(p.policy, res.Decision, err, t0)
		switch {
		case errors.Is(err, ErrInvalidArgument):
			return Waited{}, err
		case err != nil:
			return Waited{Verdict: l.fault(ctx, p.policy, err), Waited: clk.Now().Sub(start)}, nil
		case res.Decision.Allowed:
			if err := sleep(ctx, clk, res.Delay); err != nil {
				l.refund(ctx, p.reqs)
				return Waited{}, err
			}
			return Waited{Verdict: Verdict{Allowed: true, Policy: p.policy, Decision: res.Decision}, Waited: clk.Now().Sub(start)}, nil
		}
		ra := res.Decision.RetryAfter
		if ra <= 0 || ra > left {
			return Waited{Verdict: Verdict{Policy: p.policy, Decision: res.Decision}, Waited: clk.Now().Sub(start)}, nil
		}
		if err := sleep(ctx, clk, ra); err != nil {
			return Waited{}, err
		}
	}
}

// refund gives back an abandoned reservation, on a context of its own:
// the caller's has ended.
func (l *Limiter[T]) refund(ctx context.Context, reqs []Request) {
	sctx, cancel := l.storeCtx(context.WithoutCancel(ctx))
	defer cancel()
	rs, _ := Facet[Reserver](l.store) // only a Reserver made the reservation
	if err := rs.Refund(sctx, reqs...); err != nil {
		l.opts.logger.WarnContext(ctx, "ratelimit: could not give back an abandoned reservation",
			"scene", l.def.Scene, "error", err)
	}
}

// fault is the verdict of the failure mode for a store fault.
func (l *Limiter[T]) fault(ctx context.Context, policy string, err error) Verdict {
	if ok, held := l.faults.allow(time.Now()); ok {
		l.opts.logger.WarnContext(ctx, "ratelimit: store fault, applying failure mode",
			"scene", l.def.Scene, "policy", policy, "failure_mode", l.def.FailureMode.String(),
			"error", err, "faults_not_logged", held)
	}
	return Verdict{Allowed: l.def.FailureMode == FailOpen, Policy: policy, Fault: err}
}

// sleep waits d on c, or until ctx ends.
func sleep(ctx context.Context, c clock.Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}
