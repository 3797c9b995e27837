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
// The backends agree on these orders, which the model takes as canonical:
// a Lease promotes the due jobs of the queues it leases from only, queue by
// queue in the order named, each by (RunAt, sequence); then fills the
// tenants and then the groups whose wake has come (by wake, then name),
// fails the jobs past MaxWait, and cancels the groups past their TTL; a
// step settles once its moves are done, filling the tenants, then the
// groups, then completing the groups owed, each in the order asked.
// Cleanup keeps a queue's virtual time, idle or not.
//
// The SQL stores (SQLite and Postgres) run one scheduler, package
// queue/sqlstore, so they share these choices as well:
//
//   - A job that waited past its MaxWait is failed only if, under its
//     scopes' locks, it is still waiting with a deadline that has passed;
//     the step then settles the jobs it failed, not the ones it listed.
//   - Timed work is bounded per Lease and kind by one constant
//     (sqlstore.SchedBatch, 100): due jobs placed one by one per queue,
//     scopes woken, waits expired, groups expired. Due jobs of no tenant
//     or group that already have a tag are promoted by one set-based
//     statement, up to sqlstore.PlainBatch (1,000).
//   - A Lease reads once when each timed step next has work (one index
//     probe per kind) and skips the steps with none; the Postgres store
//     also skips the scheduler entirely when its gate finds nothing for it.
//   - A Lease that picks nothing still does the fills its holds owe, and
//     fills the tenants of a cancelled group in the order of its jobs.
//   - The fair tag is handed out in Go (backend.FairTag, FairOrder) for a
//     job placed one by one; the set-based statements that tag many
//     weight-1 jobs at once compute the same rule in SQL text built from
//     the same constants (sqlstore.FairTagsSQL, checked against Go on a
//     table of cases).
//
// Where they still differ, the model runs the other order too (its
// variant) and, when the outcomes differ, the operation's Choices name
// it: a caller comparing backends must not rely on that step. The
// differences kept, and why:
//
//   - Ties in (band, rank) between jobs of different queues. The SQL stores
//     and the model break them by one global sequence. Redis numbers jobs per
//     queue (from the clock, so a queue's keys stay in its slot) and
//     names a scope's waiting jobs by rank then job key, so its ties go by
//     queue key. A common order needs a global counter written by every
//     enqueue (a hot key in no queue's slot) or a new member format in
//     every stored sorted set (a migration of live data).
//   - How a Lease over several queues merges them: the SQL stores let the
//     queues take turns within a band, Redis compares rank then member; ranks of
//     different queues come from separate virtual times, and Redis has no
//     cheap common order (above).
//   - Bounded work per call: a Lease looks at a bounded number of
//     candidates (four rounds on every store) and of timed items (Redis
//     100 in all, the SQL stores 100 per kind), so a Lease that finds more
//     than MaxLeaseHolds jobs blocked is left open. Unbounded, one call
//     could hold the store for any time.
//   - A Lease that cancels several groups past their TTL: the SQL stores
//     settle group by group (filling its tenants in the order of its
//     jobs); Redis settles once at the end. RescueExpired settles once at
//     the end on every backend (the SQL stores through
//     sqlstore.SettleRescued), so the model's variant settles as it goes
//     only for the groups' expiry.
//   - Which transitions fill a scope: the model and Redis fill a job's
//     tenant and group when it leaves pending or active; the SQL stores'
//     settle fills them after any transition it settles (cancelling a
//     waiting or scheduled job too), since it does not read the state the
//     job left.
//     This shows only between the end of a pause or crawl delay and the
//     next Lease, which fills the scope on every backend.
//
// Time-driven work happens at the next Lease, as in the backends: a tenant
// or group held back by a pause or crawl delay gets a wake at its end, and
// the first Lease at or after it fills the scope. A wake stays when a
// pause is cut short, so the scope is then also filled at the old end;
// Timers lists every wake, so a caller can tell when a Lease will act.
package sched
