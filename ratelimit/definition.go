package ratelimit

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/keyspace"
)

// Namespace is the keyspace namespace of every rate-limit key.
const Namespace = "rate-limit"

// FailureMode decides what Allow and Assert answer when the store fails.
// It is fixed by the Definition, never chosen by the caller.
type FailureMode uint8

const (
	// FailOpen allows requests while the store is unavailable. The default:
	// right for ordinary scenes where an outage must not become one.
	FailOpen FailureMode = iota
	// FailClosed denies requests while the store is unavailable: right for
	// authentication and for scenes that protect money or capacity.
	FailClosed
)

// String returns "open" or "closed".
func (m FailureMode) String() string {
	if m == FailClosed {
		return "closed"
	}
	return "open"
}

// Definition describes one scene: how a typed input becomes a policy, a
// subject, limits and a cost.
type Definition[T any] struct {
	// Scene names the scenario, such as "member" or "ip". Required.
	Scene string
	// Policy names the action within the scene, such as "export-usage".
	// Nil means the policy "default".
	Policy func(T) string
	// Subject returns type/id pairs naming who is limited, such as
	// ("member", id) or ("out-link", id, "uid", uid). Required; the types
	// keep equal ids of different kinds on separate counters.
	Subject func(T) []string
	// Limits returns the limits to apply, all in one all-or-nothing
	// decision. Required.
	Limits func(T) []Limit
	// Cost is what one call uses; nil means 1. 0 peeks.
	Cost func(T) int64
	// FailureMode is applied by Allow and Assert on store faults; the zero
	// value is FailOpen.
	FailureMode FailureMode
	// Shadow computes and reports decisions but always allows.
	Shadow bool
	// Error builds Assert's error for a denied decision; nil means a
	// *LimitedError.
	Error func(T, Decision) error
	// InFlight returns the in-flight limit Acquire holds leases under; nil
	// (or a zero Max) means the scene has none and Acquire fails with
	// ErrInvalidArgument unless an override sets one.
	InFlight func(T) InFlight
}

// Event is what an Observer sees after every decision.
type Event struct {
	Scene, Policy string
	Decision      Decision
	// Err is the store or argument error, if any.
	Err error
	// Latency is the time spent in the store.
	Latency time.Duration
	// Shadow is true when the scene is in shadow mode.
	Shadow bool
	// FailureModeApplied is set when Allow, Assert or Check answered by the
	// failure mode.
	FailureModeApplied bool
	// Allowed is the answer given to the caller (after shadow and failure
	// mode).
	Allowed bool
	// Release is set when the event reports a Release, not a decision:
	// Allowed then says whether the lease was still held, and Decision is
	// empty.
	Release bool
}

// Observer is called synchronously after each decision made by Consume,
// Allow, Assert or Check (once per call), and after each Release; keep it
// cheap.
type Observer func(Event)

// Option configures a Limiter.
type Option func(*options)

type options struct {
	timeout   time.Duration
	logger    *slog.Logger
	observer  Observer
	clock     clock.Clock
	overrides *Overrides
}

// WithTimeout bounds each store call (default 100ms), so a hung store cannot
// hang the caller. 0 or less means the default; use a context deadline for
// anything longer.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithLogger sets where store faults and shadow denials are logged (default
// slog.Default()). Store faults are logged at most once per 10 s per
// Limiter, each line counting the faults held back since the last
// (faults_not_logged); an observer still sees every one.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithObserver attaches a hook called after every decision, for metrics.
func WithObserver(fn Observer) Option { return func(o *options) { o.observer = fn } }

// DefaultTimeout is the store timeout of a Limiter without WithTimeout.
const DefaultTimeout = 100 * time.Millisecond

// Define checks def and returns its Limiter. It fails with
// ErrInvalidArgument when the scene is empty, a required function is nil,
// or the failure mode is unknown.
func Define[T any](store Store, def Definition[T], opts ...Option) (*Limiter[T], error) {
	if err := validateDefinition(store, def); err != nil {
		return nil, err
	}
	o := options{timeout: DefaultTimeout, logger: slog.Default(), clock: clock.Or(nil)}
	for _, opt := range opts {
		opt(&o)
	}
	if o.timeout <= 0 {
		o.timeout = DefaultTimeout
	}
	return &Limiter[T]{store: store, def: def, opts: o, faults: &faultLog{}}, nil
}

func validateDefinition[T any](store Store, def Definition[T]) error {
	switch {
	case store == nil:
		return invalidArg("store", "must not be nil")
	case def.Scene == "":
		return invalidArg("Definition.Scene", "must not be empty")
	case def.Subject == nil:
		return invalidArg("Definition.Subject", "must not be nil")
	case def.Limits == nil:
		return invalidArg("Definition.Limits", "must not be nil")
	case def.FailureMode > FailClosed:
		return invalidArg("Definition.FailureMode", "must be FailOpen or FailClosed")
	}
	return nil
}

// Limiter applies one Definition. It is safe for concurrent use.
type Limiter[T any] struct {
	store  Store
	def    Definition[T]
	opts   options
	faults *faultLog
}

// Scene returns the definition's scene.
func (l *Limiter[T]) Scene() string { return l.def.Scene }

// Key returns the logical key for in: rate-limit:<scene>:<policy>:{<subject…>},
// every segment escaped, the subject in a Redis hash tag.
func (l *Limiter[T]) Key(in T) (string, error) {
	_, key, err := l.key(in)
	return key, err
}

func (l *Limiter[T]) policy(in T) string {
	if l.def.Policy == nil {
		return "default"
	}
	return l.def.Policy(in)
}

func (l *Limiter[T]) key(in T) (policy, key string, err error) {
	policy = l.policy(in)
	if policy == "" {
		return "", "", invalidArg("policy", "must not be empty in scene %q", l.def.Scene)
	}
	subject := l.def.Subject(in)
	if len(subject) == 0 || len(subject)%2 != 0 {
		return policy, "", invalidArg("subject", "must be type/id pairs such as (\"member\", id), got %d segments", len(subject))
	}
	for i, s := range subject {
		if s == "" {
			return policy, "", invalidArg("subject", "segment %d must not be empty", i)
		}
	}
	segs := append([]string{l.def.Scene, policy}, subject...)
	key, err = keyspace.JoinTagged(Namespace, 2, len(segs), segs...)
	if err != nil {
		return policy, "", invalidArg("key", "%v", err)
	}
	return policy, key, nil
}

// Requests returns the store requests Consume would send for in.
func (l *Limiter[T]) Requests(in T) ([]Request, error) {
	_, reqs, err := l.requests(in)
	return reqs, err
}

func (l *Limiter[T]) requests(in T) (string, []Request, error) {
	p, err := l.plan(context.Background(), in)
	return p.policy, p.reqs, err
}

// Consume counts in against its limits and returns the raw decision. Store
// faults are returned (matching ErrStoreUnavailable), not masked; shadow
// mode does not change the decision. The observer sees the call like any
// other decision, with Allowed the raw decision.
func (l *Limiter[T]) Consume(ctx context.Context, in T) (Decision, error) {
	start := time.Now()
	d, policy, err := l.consume(ctx, in)
	if l.opts.observer != nil {
		l.opts.observer(Event{Scene: l.def.Scene, Policy: policy, Decision: d, Err: err,
			Latency: time.Since(start), Shadow: l.def.Shadow, Allowed: err == nil && d.Allowed})
	}
	return d, err
}

func (l *Limiter[T]) consume(ctx context.Context, in T) (Decision, string, error) {
	p, err := l.plan(ctx, in)
	if err != nil || p.unlimited {
		return p.decision(), p.policy, err
	}
	reqs := p.reqs
	ctx, cancel := context.WithTimeout(ctx, l.opts.timeout)
	defer cancel()
	d, err := l.store.Consume(ctx, reqs...)
	if err != nil && !errors.Is(err, ErrInvalidArgument) && !errors.Is(err, ErrStoreUnavailable) {
		err = &StoreError{Op: "consume", Err: err}
	}
	return d, p.policy, err
}

// Allow reports whether in may proceed, counting it when it does. A store
// fault (including a timeout) is logged and answered by the failure mode;
// an invalid argument is returned as an error and never masked. In shadow
// mode the answer is always true.
func (l *Limiter[T]) Allow(ctx context.Context, in T) (bool, error) {
	allowed, _, err := l.decide(ctx, in)
	return allowed, err
}

// Assert returns nil when in may proceed, the definition's error (default
// *LimitedError) when it may not, or an ErrInvalidArgument error. Store
// faults are answered by the failure mode like Allow; a fail-closed denial
// caused by a fault returns a *LimitedError wrapping nothing and an empty
// decision.
func (l *Limiter[T]) Assert(ctx context.Context, in T) error {
	allowed, d, err := l.decide(ctx, in)
	if err != nil || allowed {
		return err
	}
	if l.def.Error != nil {
		return l.def.Error(in, d)
	}
	return &LimitedError{Scene: l.def.Scene, Policy: l.policy(in), Decision: d}
}

func (l *Limiter[T]) decide(ctx context.Context, in T) (bool, Decision, error) {
	v, err := l.Check(ctx, in)
	return v.Allowed, v.Decision, err
}
