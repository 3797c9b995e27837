package queue

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/internal/handlerctx"
)

// DefaultBudgetRecheck bounds how long a job held by an in-flight maximum
// waits before it is tried again (see JobBudgets.Recheck).
const DefaultBudgetRecheck = time.Second

// JobBudgets makes jobs wait for shared budgets before they start (see
// package budget). After a job is leased, and after its start rates
// admit it, its claim is decided — every budget it names together, all
// or nothing, in one store operation:
//
//   - Admitted: the job runs, its Ticket kept with it; when its attempt
//     ends (completed, failed, snoozed, panicked, lease lost or given back
//     at shutdown) the ticket is settled with the usage the handler
//     reported (ReportUsage), or at the estimate when it reported none.
//   - Held: the job is snoozed until the hold's Until, without spending
//     an attempt and without failing. A snoozed job keeps its enqueue
//     sequence and its tenant, so it comes back in its place in fair
//     order. A hold by an in-flight maximum ends as soon as a holder
//     settles, so its Until is only an upper bound: such a job is tried
//     again after at most Recheck.
//
// A job whose claim names no budget pays nothing: no store call. A claim
// the budgets refuse as invalid (an unknown budget, a cost no limit can
// ever hold) or a store fault holds the job for Recheck and is logged:
// a budget is a promise to an upstream, so a job does not run unchecked.
type JobBudgets struct {
	// Budgets decides the claims; nil turns the feature off.
	Budgets *budget.Budgets
	// Claim returns what a job claims: its budgets and estimated costs
	// (from its payload, say). Nil claims Defaults for the job's queue
	// and kind. A claim with no tenant is given the job's tenant.
	Claim func(*Job) budget.Claim
	// Defaults returns the costs a job of queue and kind claims when
	// Claim is nil (the server passes its configuration's default
	// claims, config.Budgets.DefaultClaim). Nil: no defaults.
	Defaults func(queue, kind string) map[string]budget.Cost
	// Recheck bounds the wait of a job held by an in-flight maximum, or
	// by a store fault; default DefaultBudgetRecheck.
	Recheck time.Duration
	// OnHold, when set, is told of every hold, to explain it (the server
	// shows it on the job). It must not block.
	OnHold func(job *Job, h budget.Hold)
	// PauseQueue says every job of the queues served claims the same
	// budgets (a queue per upstream): a hold on a budget's total (or its
	// closing) then also pauses the job's queue until room is expected
	// (TenantBackend.Pause, for every worker), and the held job goes back
	// to pending in its fair place. Without it only the held job waits:
	// other jobs of the queue are still leased, and each one the budget
	// holds goes back with its own wait, so a tenant's jobs leased and
	// held before another tenant's first job stay ahead of it. With it,
	// the fleet leases at most one round of jobs per opening of the
	// budget, and a newcomer tenant's first job starts within two rounds
	// (see docs/budgets.md). Holds by a tenant's own limits never
	// pause the queue. Ignored on a backend without tenant scheduling.
	PauseQueue bool
}

// On reports whether budgets apply at all.
func (jb JobBudgets) On() bool { return jb.Budgets != nil }

// ClaimOf returns the claim job j makes; it names no budget when the job
// uses none.
func (jb JobBudgets) ClaimOf(j *Job) budget.Claim {
	var c budget.Claim
	switch {
	case jb.Claim != nil:
		c = jb.Claim(j)
	case jb.Defaults != nil:
		c.Costs = jb.Defaults(j.Queue, j.Kind)
	}
	if c.Tenant == "" {
		c.Tenant = j.Tenant
	}
	return c
}

// Admit decides the claim of a job leased from b. It returns true when
// the job may run, with its ticket when the claim named budgets (nil
// when it named none). Otherwise the job has been given back to wait
// (snoozed without spending its attempt; see JobBudgets) and the caller
// must not run it.
func (jb JobBudgets) Admit(ctx context.Context, b backend.Backend, l Lease, log *slog.Logger) (*budget.Ticket, bool) {
	if jb.Budgets == nil {
		return nil, true
	}
	c := jb.ClaimOf(l.Job)
	if len(c.Costs) == 0 {
		return nil, true
	}
	if log == nil {
		log = slog.Default()
	}
	recheck := jb.Recheck
	if recheck <= 0 {
		recheck = DefaultBudgetRecheck
	}
	a, err := jb.Budgets.Admit(ctx, c)
	if err != nil {
		log.Error("queue: budget claim not decided; the job waits", "job", l.Job.ID, "err", err)
		jb.snooze(ctx, b, log, l, recheck)
		return nil, false
	}
	if a.Admitted {
		return &a.Ticket, true
	}
	h := a.Hold
	wait := h.RetryAfter
	if h.Limit == budget.LimitInFlight {
		wait = min(wait, recheck)
	}
	if jb.OnHold != nil {
		jb.OnHold(l.Job, h)
	}
	wait = max(wait, time.Millisecond)
	if jb.PausesQueue(h) {
		if tb := b.Features().Tenants; tb != nil {
			_, err := tb.Pause(ctx, QueueScope(l.Job.Queue), wait)
			if err == nil {
				if _, err = b.Requeue(ctx, l.Job.ID, l.Token); err == nil || errors.Is(err, ErrLeaseLost) {
					return nil, false
				}
			}
			log.Error("queue: could not pause a queue held by its budget", "queue", l.Job.Queue, "err", err)
		}
	}
	jb.snooze(ctx, b, log, l, wait)
	return nil, false
}

// PausesQueue reports whether the hold h pauses the held job's queue
// (see PauseQueue).
func (jb JobBudgets) PausesQueue(h budget.Hold) bool { return jb.PauseQueue && !tenantScoped(h) }

// tenantScoped reports whether h holds only the claim's tenant.
func tenantScoped(h budget.Hold) bool {
	switch h.Scope {
	case budget.ScopeTenant, budget.ScopeCeiling, budget.ScopeFloor:
		return true
	}
	return false
}

func (jb JobBudgets) snooze(ctx context.Context, b backend.Backend, log *slog.Logger, l Lease, d time.Duration) {
	if _, err := b.Snooze(ctx, l.Job.ID, l.Token, d); err != nil && !errors.Is(err, ErrLeaseLost) {
		log.Error("queue: could not give back a job held by its budgets", "job", l.Job.ID, "err", err)
	}
}

// jobUsage is an admitted job's ticket and the usage its handler reported.
type jobUsage struct {
	ticket budget.Ticket
	mu     sync.Mutex
	actual map[string]budget.Cost
}

// ErrNoBudgets is returned by ReportUsage for a job that claimed no
// budget.
var ErrNoBudgets = errors.New("queue: the job claimed no budget")

// ReportUsage records what the job whose handler ctx belongs to really
// used, by budget and unit ({"openai": {"tokens": 3000}}): when its
// attempt ends, its budgets are settled with it — the difference from the
// estimate charged or refunded (see budget.Budgets.Settle). Reports add
// up: call it after each upstream call with that call's usage, or once
// with the total. Units never reported are settled at their estimate. It
// returns ErrNotInHandler outside a handler and ErrNoBudgets for a job
// that claimed no budget.
func ReportUsage(ctx context.Context, used map[string]budget.Cost) error {
	l, ok := handlerctx.Value(ctx).(*jobLease)
	if !ok {
		return ErrNotInHandler
	}
	return l.ReportUsage(ctx, used)
}

// ReportUsage adds used to the usage the job l holds will be settled with.
func (l *jobLease) ReportUsage(_ context.Context, used map[string]budget.Cost) error {
	if l.usage == nil {
		return ErrNoBudgets
	}
	l.usage.add(used)
	return nil
}

func (u *jobUsage) add(used map[string]budget.Cost) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.actual == nil {
		u.actual = map[string]budget.Cost{}
	}
	for name, cost := range used {
		if u.actual[name] == nil {
			u.actual[name] = budget.Cost{}
		}
		for unit, n := range cost {
			u.actual[name][unit] += n
		}
	}
}

func (u *jobUsage) reported() map[string]budget.Cost {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.actual
}

// settleTimeout bounds a settlement after a job ends. Real time: it bounds
// a store call.
const settleTimeout = 10 * time.Second

// admitBudgets decides a leased job's budgets for a worker. It returns
// whether the job may run and, when it claimed a budget, the record its
// handler reports usage to and the job is settled with.
func (r *run) admitBudgets(l Lease) (*jobUsage, bool) {
	if r.w.cfg.Budgets.Budgets == nil {
		return nil, true // no budgets: no call, no record
	}
	t, ok := r.w.cfg.Budgets.Admit(context.Background(), r.w.b, l, r.w.cfg.Logger)
	if !ok || t == nil {
		return nil, ok
	}
	return &jobUsage{ticket: *t}, true
}

// settleBudgets settles job's ticket, if it has one, with the usage its
// handler reported.
func (r *run) settleBudgets(job *Job, u *jobUsage) {
	if u == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if _, err := r.w.cfg.Budgets.Budgets.Settle(ctx, u.ticket, u.reported()); err != nil {
		r.w.cfg.Logger.Error("queue: could not settle a job's budgets; its in-flight places free at their lease TTL", "job", job.ID, "err", err)
	}
}
