// Package redisqueue is a queue.Backend on Redis, shared by every worker and
// client that talks to the same Redis (single node, Sentinel or Cluster).
//
// # Transitions
//
// Every transition (enqueue, lease, extend, complete, fail, snooze or
// requeue, cancel, rescue, cleanup) is one Lua script, so it is atomic: no
// other client sees a half-done step, and a job never sits in active
// without its lease token and deadline. On Redis 7 and later the scripts
// are the functions of one library, loaded once (FUNCTION LOAD, named
// sluice_<hash of its text>) and called with FCALL, so the code they share
// is not rebuilt on every call; elsewhere (older Redis, Cluster, a test
// double without FCALL) they are sent by SHA-1 (EVALSHA) and loaded on
// demand. Concurrent calls are gathered into pipelines (see
// Options.DisableBatching), one round trip for many, and concurrent
// Complete calls on one queue, or single-queue Enqueue calls, that meet
// there run as one script over all their jobs. A Lease hands out many jobs
// per script run.
//
// Jobs that need none of the scheduler (no tenant or group) take a lean
// path: small scripts of their own for enqueue, lease and complete that
// store exactly what the full ones store, and hand a run to the full
// script when it needs more (due jobs to promote, a pause, a tenant's
// job). At ordinary rates a script's cost is mostly the Lua it builds
// around its commands, so these cost about half as much per job.
//
// An idle worker costs Redis nothing while nothing arrives: a Lease that
// finds its queues empty is remembered, and the next Lease of the same
// queues answers empty without a round trip until a notification says
// otherwise (a job became ready, or timed work was added: a job due
// later, a scheduler timer), until the earliest timed work it saw is due,
// and for at most 5 seconds. This holds only while the Backend's pub/sub
// subscriptions (Subscribe, which queue.Worker uses) are confirmed, and
// not on a Cluster client.
//
// # Keys
//
// Every key is built through package keyspace under Options.Prefix
// (default "sluice:") with the queue name as the Redis Cluster hash tag, so
// all keys of a queue live in one slot:
//
//	sluice:queue:{mail}:pending     ready jobs; score = band, member = rank and sequence
//	sluice:queue:{mail}:scheduled   delayed and snoozed jobs; score = RunAt
//	sluice:queue:{mail}:retrying    jobs waiting to retry; score = RunAt
//	sluice:queue:{mail}:active      leased jobs; score = lease deadline (the rescue index)
//	sluice:queue:{mail}:completed   finished jobs; score = when retention starts (see Memory)
//	sluice:queue:{mail}:failed      the same for failed jobs
//	sluice:queue:{mail}:cancelled   the same for cancelled jobs
//	sluice:queue:{mail}:waiting     jobs held back by a tenant or group; ordered as pending
//	sluice:queue:{mail}:jobs        every job of the queue; score 0, members in sequence order (listing)
//	sluice:queue:{mail}:seq         a string: the last sequence handed out
//	sluice:queue:{mail}:sched       a hash: the fair order's virtual time, aging step, finish tags
//	sluice:queue:{mail}:paused      a string: the end of the queue's pause, while one is in force
//	sluice:queue:{mail}:job:<seq>   a job (a hash; fields in lua/lib.lua); :errors its error history (a list)
//	sluice:queue:{mail}:unique:<k>  the job holding unique key k
//	sluice:queue:{mail}:ready       pub/sub channel: jobs may be ready
//	sluice:sched:timers             pub/sub channel: timed work was added (not on Cluster)
//	sluice:queues                   the set of queue names (for calls on all queues; see Registry)
//	sluice:outbox:...               the event outbox, with Options.Outbox (see Event outbox)
//	sluice:tenant_secrets           the tenants' webhook signing secrets (a hash; queue.TenantSecrets)
//	sluice:sched:...                the tenant and group scheduler, not tagged by queue: a tenant's
//	                                settings and counts (sched:t:<tenant>), a group's (sched:g:<group>),
//	                                the tenant list (sched:tenants) and the rest, field by field in
//	                                lua/sched.lua
//	sluice:schedules:{s}            the set of schedule names (queue.ScheduleStore)
//	sluice:schedules:{s}:<name>     a hash: one schedule's definition and state (lua/schedule_put.lua)
//
// This is the one list of the keys: keys.go builds the per-queue ones in
// this order (the order of every script's KEYS), and the scripts' headers
// describe only the fields inside them.
//
// Names become key segments through keyspace.Escape. Go builds the key of
// every name a call gives (a queue, a job's tenant and group, a tenant or
// group the call is about, an event id, a subscription, a schedule) and
// passes it to the script. A script escapes only the names it finds while
// it runs, which stored data keeps as they are (a released job's tenant, a
// group's completion queue, a flow id, a pruned delivery's subscription),
// with lib.lua's esc, the scripts' one copy of keyspace.Escape, which a
// test checks against it.
//
// Times are Unix microseconds; sorted-set scores stay exact because they
// are integers below 2^53. The ready set is in the fair order of
// queue.TenantBackend: a job's score is its band (the priority, or 0 with
// aging: at most queue.MaxPriority), and its member is its rank (the fair
// start tag, plus the aged priority) in 16 digits followed by its
// sequence. Redis orders equal scores by member, so (band, rank, sequence)
// order needs no packing into one float and has no range limit.
//
// # Tenants and groups
//
// The backend serves queue.TenantBackend and queue.GroupBackend (its
// Features' Tenants and Groups parts) with the rules written there. A tenant's and a group's job counts per state,
// and their sets of pending and waiting jobs, change only in the script of
// the transition that moves the job (lua/sched.lua's move), so they never
// drift from the jobs. One Lua function, ready, decides whether a job that
// becomes ready is pending or waiting, for every script that makes a job
// ready. A group's completion job is enqueued by the script whose
// transition finishes the group's last job. The tenant list
// (queue.TenantLister, the TenantList part) reads a registry of tenant names kept by the same
// scripts. Jobs without tenant or group cost a fair tag per enqueue and
// little else.
//
// # Job ids
//
// A job's sequence is the time of its enqueue in microseconds (from the
// backend's clock), or one more than the queue's previous sequence when
// that is not smaller, written as 16 digits. It is unique and increasing
// within a queue and follows enqueue time across queues, until the year
// 2255. The id is the sequence, "-" and the queue name, such as
// "1893553445000000-mail": ids sort by enqueue time, and Get finds the
// queue (and so the Cluster slot) in the id itself, with no index to keep
// in step. Ids go into URL paths (/v1/jobs/{id}), so they hold only the
// characters RFC 3986 leaves unreserved (A-Z a-z 0-9 - . _ ~): the queue
// name is written as in keys (keyspace.Escape) but with '~' in place of
// '%', and a '~' of the name as "~7E". Queue "c:d" gives
// "1893553445000000-c~3Ad"; a name of letters, digits, '-', '.' and '_'
// appears as it is. Ids made before this form, with '%' escapes, are still
// read; those of a queue whose name holds '~' are not.
//
// # Registry
//
// Calls on every queue (Stats, RescueExpired, Cleanup) find the queues in
// the registry, sluice:queues. Every script that gives a queue a job it
// may not have had (enqueue, lease, retry, a group's completion job) adds
// the queue's name there in the same step; adding a name already there
// changes nothing. So when Redis loses the registry (a restart without
// persistence, FLUSHDB, a failover that lost a write), the next such call
// writes it again, and a queue's expired leases are rescued and its counts
// shown. On a Redis Cluster client the registry is in no queue's slot, so
// a script cannot write it: Enqueue adds the names before its scripts, and
// Lease and Retry after theirs, with one SADD per call.
//
// # Time
//
// Scripts read Redis TIME, so every process shares the server's clock,
// unless Options.Clock is set (for tests): then the time is sent with each
// call.
//
// # Memory
//
// Finished jobs are deleted by Cleanup (the worker's cleaner) after their
// retention; unique keys held for a window also expire on their own. The
// jobs of a group are kept until the group has ended (it is done and its
// completion job has finished), and their retention starts then: the
// cleaner moves such a job it finds too early later in its state's index
// (to the group's end, or to now while the group has not ended), so it
// looks at it again one retention later and it never stands in front of
// jobs that may go. A done group is deleted a retention after it ended.
// Redis must not evict keys: New logs a warning when maxmemory-policy is
// not noeviction, because an evicted job or index entry is a lost job.
//
// # Event outbox
//
// With Options.Outbox the backend serves queue.Outbox (its Features'
// Outbox part): the script that
// moves a job to a final state (Complete, a final Fail, Cancel, Snooze or
// Requeue of a job whose cancel was requested, RescueExpired) appends the
// job's event in the same run, so an event exists exactly when its
// transition happened. Its keys are global, not per queue:
//
//	sluice:outbox:due               event ids; score = when each is next due (µs)
//	sluice:outbox:event:<id>        an event (a hash; fields in lua/events.lua), its claim token and delivery progress
//	sluice:outbox:seq               the last event number handed out (in blocks)
//	sluice:outbox:log               the delivery log; score = its sequence
//	sluice:outbox:log:job:<id>      and log:sub:<name>, log:event:<id>: filters
//	sluice:outbox:delivery:<seq>    a log entry (a hash)
//	sluice:outbox:log:seq           the last log sequence
//
// Event ids have backend.NewEventID's form, "evt_" and 32 hex digits: the
// event's number in this store (16 digits) and a random nonce per call, so
// they are unique across stores and, within one, sort in the order the
// events were made. A claim sets the event's token and moves its due time
// to the claim's end, so an expired claim makes it due again; AckEvent
// deletes it and RetryEvent clears the token and sets a new due time, both
// fenced by the token in one script. Acknowledged events leave at once;
// log entries stay until PruneDeliveries (queue/webhook's Dispatcher
// prunes them hourly).
//
// Because those keys live in no queue's slot, New refuses Options.Outbox
// on a Redis Cluster client.
//
// # Cluster
//
// On a Redis Cluster client, a call on several queues runs one script per
// queue, because each queue lives in its own slot: Lease then takes jobs
// queue by queue in the order given (by priority within each queue, not
// across them), and a batch that spans queues is stored queue by queue,
// atomic per queue but not as a whole, so its Features lack
// queue.CapAtomicBatch there. On a single node or Sentinel every call is
// one script, whatever the queues.
//
// Tenants and groups span queues (a tenant's limit counts its jobs in
// every queue; a group's completion job may go to another queue), so their
// keys cannot share a queue's hash tag, and the scripts derive some keys
// from job fields (a tenant's key from a job's tenant). The scheduler
// therefore needs a single Redis (or Sentinel and replicas): on a Cluster
// client it is off, its Features leave out the tenant, tenant list and
// group parts (so it lacks queue.CapTenants, queue.CapGroups and
// queue.CapTenantList), and the tenant and group methods, which it still
// has, return an *queue.UnsupportedError.
//
// Passing those keys in KEYS with hash tags would not make Cluster work:
// Cluster lets one script touch keys of one slot only, whatever their
// declaration, and one scheduling step must change the job's queue keys
// and its tenant's and group's keys together (counts, waiting sets) to
// stay atomic. Nor are all the keys known before the script runs: freeing
// room releases a tenant's best waiting jobs, which the script finds in
// the tenant's waiting set and which may belong to any queue, in any slot;
// a group's completion job goes to a queue named in the group. The one
// layout that would work puts every queue's keys and the scheduler's under
// one hash tag, so a Cluster would serve the whole queue from a single
// node (no gain over a single Redis) and every stored key would change
// name. A Cluster deployment that needs tenants can instead run one Redis
// (or Sentinel) for the queue and the Cluster for other data.
package redisqueue
