package queue

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetype"
	"github.com/sluicehq/sluice/ratelimit"
)

// StartRates limits how fast jobs start: per tenant, per group and per
// queue, at most Quota starts per Window, counted in a ratelimit.Store
// that every worker with the same settings shares (redislimit across
// machines, memlimit within one process). A zero Limit means no limit;
// a map entry overrides the default for one name (a zero entry lifts it).
//
// A job over a rate does not fail and spends no attempt: the worker that
// leased it pauses the scope over its rate until the rate allows a start
// again (Client.BackOff, so every worker sees it) and gives the job back,
// and it waits with the scope's other jobs. On a backend without
// TenantBackend the job is snoozed instead. If the store fails, the job
// runs (a rate limit must not stop the queue) and the fault is logged.
//
// Counters live under the keys queue-start:tenant:<name>,
// queue-start:group:<id> and queue-start:queue:<name>.
type StartRates struct {
	// Store counts starts; without it no rate applies.
	Store ratelimit.Store
	// Tenant is the start rate of every tenant; Tenants overrides it.
	Tenant  ratelimit.Limit
	Tenants map[string]ratelimit.Limit
	// Group is the start rate of every group; Groups overrides it.
	Group  ratelimit.Limit
	Groups map[string]ratelimit.Limit
	// Queue is the start rate of every queue; Queues overrides it.
	Queue  ratelimit.Limit
	Queues map[string]ratelimit.Limit
}

// Validate returns an error naming the first limit that is set but
// invalid.
func (r StartRates) Validate() error {
	check := func(field FieldPath, l ratelimit.Limit) error {
		if l == (ratelimit.Limit{}) {
			return nil
		}
		if err := l.Validate(); err != nil {
			return queuetype.InvalidArgument(field, "is invalid: %v", err)
		}
		return nil
	}
	for _, c := range []struct {
		field string
		def   ratelimit.Limit
		per   map[string]ratelimit.Limit
	}{{"Tenant", r.Tenant, r.Tenants}, {"Group", r.Group, r.Groups}, {"Queue", r.Queue, r.Queues}} {
		if err := check(Field("StartRates", c.field), c.def); err != nil {
			return err
		}
		for name, l := range c.per {
			if err := check(Field("StartRates", c.field+"s["+name+"]"), l); err != nil {
				return err
			}
		}
	}
	return nil
}

// rateCheck is one limit a job's start counts against.
type rateCheck struct {
	scope Scope
	req   ratelimit.Request
}

// checks lists the limits job j's start counts against.
func (r StartRates) checks(j *Job) []rateCheck {
	if r.Store == nil {
		return nil
	}
	var out []rateCheck
	add := func(kind ScopeKind, name string, def ratelimit.Limit, per map[string]ratelimit.Limit) {
		if name == "" {
			return
		}
		l, ok := per[name]
		if !ok {
			l = def
		}
		if l == (ratelimit.Limit{}) {
			return
		}
		key, err := keyspace.Join("queue-start", string(kind), name)
		if err != nil {
			return
		}
		out = append(out, rateCheck{scope: Scope{Kind: kind, Name: name}, req: ratelimit.Request{Key: key, Limit: l, Cost: 1}})
	}
	add(ScopeTenant, j.Tenant, r.Tenant, r.Tenants)
	add(ScopeGroup, j.Group, r.Group, r.Groups)
	add(ScopeQueue, j.Queue, r.Queue, r.Queues)
	return out
}

// admitStart counts the leased job's start against its start rates (see
// StartRates.Admit).
func (w *Worker) admitStart(l Lease) bool {
	return w.cfg.StartRates.Admit(context.Background(), w.b, l, w.cfg.Logger)
}

// Admit counts the start of a job leased from b against its start rates,
// for code that hands leased jobs to workers of its own (a server serving
// the worker protocol; a Worker does it by itself). It returns true when
// the job may run. Over a rate, it pauses each scope over its rate until
// the rate allows a start again, gives the job back without spending its
// attempt (snoozing it on a backend without TenantBackend) and returns
// false: the caller must not run it. A store fault lets the job run and
// is logged to log (nil: slog.Default()).
func (r StartRates) Admit(ctx context.Context, b backend.Backend, l Lease, log *slog.Logger) bool {
	checks := r.checks(l.Job)
	if len(checks) == 0 {
		return true
	}
	if log == nil {
		log = slog.Default()
	}
	reqs := make([]ratelimit.Request, len(checks))
	for i, c := range checks {
		reqs[i] = c.req
	}
	d, err := r.Store.Consume(ctx, reqs...)
	if err != nil {
		log.Warn("queue: start rate not checked; the job runs", "job", l.Job.ID, "err", err)
		return true
	}
	if d.Allowed {
		return true
	}
	deferStart(ctx, b, log, l, checks, d)
	return false
}

// deferStart pauses each scope over its rate until the rate allows a start
// and gives the job back without spending its attempt.
func deferStart(ctx context.Context, b backend.Backend, log *slog.Logger, l Lease, checks []rateCheck, d ratelimit.Decision) {
	tb := b.Features().Tenants
	paused := tb != nil
	for i, res := range d.Results {
		if res.Allowed || !paused {
			continue
		}
		if _, err := tb.Pause(ctx, checks[i].scope, max(res.RetryAfter, time.Millisecond)); err != nil {
			log.Error("queue: could not pause a scope over its start rate", "scope", checks[i].scope.String(), "err", err)
			paused = false
		}
	}
	var err error
	if paused {
		_, err = b.Requeue(ctx, l.Job.ID, l.Token)
	} else {
		_, err = b.Snooze(ctx, l.Job.ID, l.Token, max(d.RetryAfter, time.Millisecond))
	}
	if err != nil && !errors.Is(err, ErrLeaseLost) {
		log.Error("queue: could not give back a job over its start rate", "job", l.Job.ID, "err", err)
	}
}
