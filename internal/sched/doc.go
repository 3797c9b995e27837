// Package sched is the tenant and group scheduler's rules written once, as
// a pure and deterministic model: the executable form of the contract that
// queue.TenantBackend, queue.GroupBackend and queue.Backend state in prose.
//
// A Model holds jobs, tenants, groups and queues in memory and moves them
// exactly as a backend must: admit or hold a job that becomes ready (pending
// or waiting), release waiting jobs best first when room appears, give each
// job its fair start tag once (backend.FairTag, backend.FairOrder), refuse an
// enqueue over a tenant's backlog, fail a job that waited past its tenant's
// MaxWait, pause tenants, groups and queues, apply a group's concurrency
// limit and crawl delay, and complete a group exactly once, enqueuing its
// completion job in the same step. It does no I/O and reads no clock: every
// operation takes the time it runs at. Inputs are assumed valid, as
// queue.Client passes them to a backend (ValidateSpec and defaults
// applied).
//
// queue/queuetest drives every backend and a Model through the same random
// steps and compares what they report after each one.
//
// # What the contract leaves open
//
// Some outcomes depend on an order the contract does not fix, and the
// backends do differ there: the order in which one step fills several
// scopes or completes several groups, the order of a Lease's time-driven
// work (scopes whose pause or crawl delay ended, MaxWait deadlines, group
// TTLs) when more than one of them acts, whether a multi-job step (a
// rescue, MaxWait expiries) settles after each job or once at the end, how
// a Lease over several queues merges them, and whether a Lease promotes due
// jobs of queues it was not asked for. The model takes one order (the
// canonical one below) and, for every operation, runs the alternative
// order too; when the outcomes differ, the operation's Choices name it, and
// a caller comparing backends must not rely on that step. A Lease that
// finds more than MaxLeaseHolds jobs blocked is reported the same way: the
// backends bound the work of one call.
//
// Time-driven work happens at the next Lease, as in the backends: a tenant
// or group held back by a pause or crawl delay gets a wake at its end, and
// the first Lease at or after it fills the scope. A wake stays when a
// pause is cut short, so the scope is then also filled at the old end;
// Timers lists every wake, so a caller can tell when a Lease will act.
//
// Canonical orders: a step's fills run tenants, then groups, then group
// completions, each in the order the step asked for them, once the step's
// moves are done; a Lease promotes the due jobs of its queues by (RunAt,
// sequence), then fills the tenants and then the groups whose wake has
// come (by wake, then name), fails the jobs past MaxWait, and cancels the
// groups past their TTL; ready jobs across queues go by (band, rank,
// sequence).
package sched
