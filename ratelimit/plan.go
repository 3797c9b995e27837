package ratelimit

import (
	"context"
	"errors"
	"time"

	"github.com/sluicehq/sluice/clock"
)

// plan is what one call of a Limiter decides: the key, the window
// requests and the in-flight limit, after overrides.
type plan struct {
	policy, key string
	subject     []string
	cost        int64
	reqs        []Request
	inFlight    InFlight // zero Max: none
	unlimited   bool
	override    *Override
}

// decision is the answer of a plan that needs no store: unlimited.
func (p plan) decision() Decision {
	if p.unlimited {
		return Decision{Allowed: true}
	}
	return Decision{}
}

// plan builds the call's requests from in and the overrides in force.
// Requests are validated as Consume needs them; callers that accept a
// cost above the capacity (partial grants) validate again themselves.
func (l *Limiter[T]) plan(ctx context.Context, in T) (plan, error) {
	p, err := l.planUnchecked(ctx, in)
	if err != nil || p.unlimited || len(p.reqs) == 0 {
		return p, err
	}
	return p, ValidateRequests(p.reqs)
}

func (l *Limiter[T]) planUnchecked(ctx context.Context, in T) (plan, error) {
	policy, key, err := l.key(in)
	p := plan{policy: policy, key: key, subject: l.def.Subject(in), cost: 1}
	if err != nil {
		return p, err
	}
	limits := l.def.Limits(in)
	if l.def.InFlight != nil {
		p.inFlight = l.def.InFlight(in)
	}
	if o := l.opts.overrides; o != nil {
		ov, ok, err := o.Lookup(ctx, l.def.Scene, policy, p.subject)
		if err != nil {
			return p, &StoreError{Op: "overrides", Err: err}
		}
		if ok {
			p.override = &ov
			if ov.Unlimited {
				p.unlimited = true
				return p, nil
			}
			if len(ov.Limits) > 0 {
				limits = ov.Limits
			}
			if ov.InFlight != nil {
				p.inFlight = *ov.InFlight
			}
		}
	}
	if len(limits) == 0 && p.inFlight.Max == 0 {
		return p, invalidArg("limits", "scene %q policy %q has no limits", l.def.Scene, policy)
	}
	if l.def.Cost != nil {
		p.cost = l.def.Cost(in)
	}
	p.reqs = make([]Request, len(limits))
	for i, lim := range limits {
		p.reqs[i] = Request{Key: key, Limit: lim, Cost: p.cost}
	}
	return p, nil
}

// WithClock sets the clock Wait reads and sleeps on (default the system
// clock); tests pass a clock.Fake.
func WithClock(c clock.Clock) Option { return func(o *options) { o.clock = clock.Or(c) } }

// WithOverrides makes the Limiter apply the overrides in force for each
// call's scene, policy and subject.
func WithOverrides(ov *Overrides) Option { return func(o *options) { o.overrides = ov } }

// Limits returns the window limits and the in-flight limit (zero Max when
// none) in force for in after overrides, and whether in is unlimited.
func (l *Limiter[T]) Limits(ctx context.Context, in T) ([]Limit, InFlight, bool, error) {
	p, err := l.planUnchecked(ctx, in)
	out := make([]Limit, len(p.reqs))
	for i, r := range p.reqs {
		out[i] = r.Limit
	}
	return out, p.inFlight, p.unlimited, err
}

// FailureMode returns the definition's failure mode, for callers of the
// methods that return store faults raw.
func (l *Limiter[T]) FailureMode() FailureMode { return l.def.FailureMode }

// storeCtx bounds one store call by the Limiter's timeout.
func (l *Limiter[T]) storeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, l.opts.timeout)
}

// wrapFault makes every store error match ErrStoreUnavailable, as consume
// does.
func wrapFault(op string, err error) error {
	if err == nil || isKnown(err) {
		return err
	}
	return &StoreError{Op: op, Err: err}
}

func isKnown(err error) bool {
	return errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrStoreUnavailable)
}

// observe reports one decision of the methods beyond Consume and Check.
func (l *Limiter[T]) observe(policy string, d Decision, err error, start time.Time) {
	if l.opts.observer != nil {
		l.opts.observer(Event{Scene: l.def.Scene, Policy: policy, Decision: d, Err: err,
			Latency: time.Since(start), Shadow: l.def.Shadow, Allowed: err == nil && d.Allowed})
	}
}
