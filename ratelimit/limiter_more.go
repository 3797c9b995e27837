package ratelimit

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/keyspace"
)

// Acquire takes an in-flight lease for in, decided together with the
// scene's window limits in one atomic step: the lease is granted only when
// the in-flight limit has room and every window limit admits the cost, and
// the windows count only then. Release the lease when the work ends; a
// lease never released frees itself after its TTL. An unlimited subject
// gets an allowed Acquisition with an empty lease (Release accepts it).
// Store faults are returned as is (matching ErrStoreUnavailable), like
// Consume; FailureMode tells how to answer them. It fails with
// ErrInvalidArgument when the store is not an Acquirer or the scene has no
// in-flight limit.
func (l *Limiter[T]) Acquire(ctx context.Context, in T) (Acquisition, error) {
	start := time.Now()
	p, err := l.plan(ctx, in)
	if err != nil || p.unlimited {
		return Acquisition{Allowed: p.unlimited, InFlightAllowed: p.unlimited, Decision: p.decision()}, err
	}
	acq, ok := Facet[Acquirer](l.store)
	switch {
	case !ok:
		return Acquisition{}, invalidArg("store", "%T does not hold in-flight leases", l.store)
	case p.inFlight.Max == 0:
		return Acquisition{}, invalidArg("InFlight", "scene %q policy %q has no in-flight limit", l.def.Scene, p.policy)
	}
	sctx, cancel := l.storeCtx(ctx)
	defer cancel()
	a, err := acq.Acquire(sctx, AcquireRequest{Key: p.key, InFlight: p.inFlight, Requests: p.reqs})
	err = wrapFault("acquire", err)
	d := a.Decision
	d.Allowed = a.Allowed
	l.observe(p.policy, d, err, start)
	return a, err
}

// Release gives back a lease from Acquire and reports whether it was still
// held. An empty lease (from an unlimited subject) is accepted and reports
// true.
func (l *Limiter[T]) Release(ctx context.Context, lease Lease) (bool, error) {
	if lease.ID == "" {
		return true, nil
	}
	acq, ok := Facet[Acquirer](l.store)
	if !ok {
		return false, invalidArg("store", "%T does not hold in-flight leases", l.store)
	}
	start := time.Now()
	sctx, cancel := l.storeCtx(ctx)
	defer cancel()
	held, err := acq.Release(sctx, lease)
	err = wrapFault("release", err)
	if l.opts.observer != nil {
		l.opts.observer(Event{Scene: l.def.Scene, Policy: leasePolicy(lease.Key), Err: err,
			Latency: time.Since(start), Shadow: l.def.Shadow, Allowed: err == nil && held, Release: true})
	}
	return held, err
}

// leasePolicy reads the policy out of a lease's key, which Release gets
// without the call's input; "" when the key is not a Limiter's.
func leasePolicy(key string) string {
	segs, err := keyspace.Split(Namespace, key)
	if err != nil || len(segs) < 2 {
		return ""
	}
	return segs[1]
}

// Partial is AllowAtMost's answer.
type Partial struct {
	// Granted is the cost counted: at most the cost asked, as much as every
	// limit admitted. 0 when denied.
	Granted int64
	// Decision is the store's decision for the granted cost.
	Decision Decision
}

// AllowAtMost counts as much of in's cost as every limit admits now, up to
// all of it, in one atomic step, and reports how much it granted (as
// redis_rate's AllowAtMost): for batch senders. A cost above a limit's
// capacity is not an error: at most the capacity is granted. Store faults
// are returned as is, like Consume.
func (l *Limiter[T]) AllowAtMost(ctx context.Context, in T) (Partial, error) {
	start := time.Now()
	p, err := l.planUnchecked(ctx, in)
	if err != nil || p.unlimited {
		return Partial{Granted: p.cost, Decision: p.decision()}, err
	}
	if err := ValidateAtMost(p.reqs); err != nil {
		return Partial{}, err
	}
	pc, ok := Facet[PartialConsumer](l.store)
	if !ok {
		return Partial{}, invalidArg("store", "%T does not grant partial costs", l.store)
	}
	sctx, cancel := l.storeCtx(ctx)
	defer cancel()
	d, granted, err := pc.ConsumeAtMost(sctx, p.reqs...)
	err = wrapFault("consume at most", err)
	l.observe(p.policy, d, err, start)
	return Partial{Granted: granted, Decision: d}, err
}

// Inspection is what Inspect reads: the counters of one subject, without
// counting anything.
type Inspection struct {
	// Policy and Key are the call's policy and logical key.
	Policy, Key string
	// Decision is a peek at every window limit in force.
	Decision Decision
	// InFlight is the in-flight limit in force (zero Max: none) and Held
	// the leases held under it.
	InFlight InFlight
	Held     int64
	// Override is the override in force, if any; Unlimited when it makes
	// the subject unlimited (nothing else is read then).
	Override  *Override
	Unlimited bool
}

// Inspect reads in's counters without counting: a peek at each window
// limit in force and the in-flight leases held.
func (l *Limiter[T]) Inspect(ctx context.Context, in T) (Inspection, error) {
	p, err := l.planUnchecked(ctx, in)
	ins := Inspection{Policy: p.policy, Key: p.key, InFlight: p.inFlight, Override: p.override, Unlimited: p.unlimited}
	if err != nil || p.unlimited {
		return ins, err
	}
	sctx, cancel := l.storeCtx(ctx)
	defer cancel()
	if len(p.reqs) > 0 {
		peeks := make([]Request, len(p.reqs))
		for i, r := range p.reqs {
			peeks[i] = Request{Key: r.Key, Limit: r.Limit}
		}
		if ins.Decision, err = l.store.Consume(sctx, peeks...); err != nil {
			return ins, wrapFault("inspect", err)
		}
	}
	if acq, ok := Facet[Acquirer](l.store); ok && p.inFlight.Max > 0 {
		ins.Held, err = acq.Held(sctx, p.key)
	}
	return ins, wrapFault("inspect", err)
}

// Reset forgets in's counters for every window limit in force and its
// in-flight leases, and reports how many it removed. It fails with
// ErrInvalidArgument when the store is not a Resetter.
func (l *Limiter[T]) Reset(ctx context.Context, in T) (int, error) {
	p, err := l.planUnchecked(ctx, in)
	if err != nil && p.key == "" {
		return 0, err
	}
	rs, ok := Facet[Resetter](l.store)
	if !ok {
		return 0, invalidArg("store", "%T cannot reset counters", l.store)
	}
	limits := make([]Limit, 0, len(p.reqs))
	for _, r := range p.reqs {
		limits = append(limits, r.Limit)
	}
	limits = append(limits, l.def.Limits(in)...) // also the counters an override hides
	sctx, cancel := l.storeCtx(ctx)
	defer cancel()
	n, err := rs.Reset(sctx, p.key, limits...)
	return n, wrapFault("reset", err)
}
