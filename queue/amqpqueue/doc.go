// Package amqpqueue is the high-throughput lane: a queue.Backend on
// RabbitMQ (AMQP 0-9-1, github.com/rabbitmq/amqp091-go) for simple, very
// frequent jobs, where a Redis or SQLite queue that records every
// transition of every job becomes the bottleneck. The broker holds the
// jobs that still have to run; nothing is written per transition except
// the broker's own bookkeeping. It needs RabbitMQ 3.10 or later (quorum
// queues with message TTLs and at-least-once dead-lettering) and no
// plugin.
//
// # Queues
//
// A lane queue q (with the default Prefix "sluice.") is three kinds of
// durable broker queues, declared on first use:
//
//	sluice.q               jobs ready to run (persistent messages)
//	sluice.q.delay.<n>ms   one per delay bucket: a message TTL, then
//	                       dead-lettered back into sluice.q
//	sluice.q.dead          dead letters: jobs that failed for good or came
//	                       back too often, with the reason in a header
//
// By default they are quorum queues: replicated (on a cluster), with
// dead-lettering at least once, and counting redeliveries themselves. With
// Options.Priorities they are classic queues with x-max-priority instead,
// because quorum queues (before RabbitMQ 4) have no priorities; the trade
// is no replication, and redeliveries counted by the backend (a redelivered
// message is published again with its count raised, so it goes to the back
// of the queue).
//
// # Enqueue
//
// A job is one persistent message: payload as the body, id as MessageId,
// kind as Type, the rest in headers. Enqueue publishes on confirm-mode
// channels and returns only when the broker has confirmed every message;
// a nack or an unroutable return (mandatory publish) is an error. When the
// connection drops before a confirm, the message is published again on
// the next connection, so a job may be stored twice, but a job is never
// reported stored when it is not. A batch is not atomic.
//
// # Leases
//
// The queue.Backend contract is lease-shaped; the lane maps it onto
// deliveries. Each queue a worker leases from gets a consumer channel with
// Options.Prefetch; Lease hands out buffered deliveries with a token naming
// the channel and the delivery tag. Complete acknowledges (acks are
// coalesced: see below); Fail publishes the job again with its attempt and
// error history to the delay queue of its backoff (or to the dead-letter
// queue after the last attempt or a queue.Permanent error) and then
// acknowledges; Snooze does the same without spending the attempt; Requeue
// hands the delivery back (nack with requeue). Extend is local: a delivery
// has no deadline at the broker, which takes a job back only when its
// consumer channel dies (or after the broker's consumer_timeout, 30
// minutes by default, which bounds how long one job may run). A token
// from a dead channel is queue.ErrLeaseLost: the broker has already put
// the job back.
//
// Acknowledgements are the broker's main cost per job, so they are sent
// by one goroutine per channel, which sends everything settled since it
// last woke: the acks below the lowest unsettled delivery as one multiple
// ack, the rest one by one. An ack is never confirmed by the broker; if
// the connection drops first, the job runs again.
//
// At least once: a worker that dies leaves its unacknowledged jobs to be
// redelivered (Job.Stalls counts redeliveries, including deliveries that
// were prefetched but never started and jobs handed back by Requeue). A
// job that comes back more than Options.MaxRedeliveries times goes to the
// dead-letter queue with the reason instead of running again, so that a
// job that kills its workers cannot kill them forever. RescueExpired
// hands back the leases of this process that their worker stopped
// renewing; other processes' leases are the broker's business.
//
// # Delays
//
// Delays need no broker plugin. A delay is served by per-queue TTL queues
// of fixed lengths (Options.DelayBuckets, 250ms to 24h by default): the
// job waits in the largest bucket not longer than what remains, comes
// back, and if it is still early goes to the next bucket. So a delayed job
// never starts before its RunAt and starts at most about the smallest
// bucket after it; each hop is one publish and one ack. Delays run on the
// broker's clock, not Options.Clock, and RunAt is compared with the
// consuming process's clock.
//
// # Reconnection
//
// The backend keeps two connections, one to publish and one to consume (so
// the broker's flow control on publishers never delays acks). Each is
// watched (NotifyClose) and dialled again with backoff when it drops;
// consumer and publisher channels are reopened on the new connection and
// queues declared again. Producers block in Enqueue (until their context
// ends) while the broker is away and carry on after; workers resume
// leasing; nothing confirmed is lost.
//
// # What the lane lacks
//
// Capabilities declares it: unique keys, listing jobs, cancelling a job
// that has not started (or that runs in another process), strict ordering
// (a retried job goes to the back), delays on the backend's clock, atomic
// batches, priorities unless Options.Priorities is set, and tenant
// scheduling and groups unless Options.Scheduler is set. A spec or a call
// that needs one of them fails with an error matching
// queue.ErrUnsupported, never silently; and queue.Client refuses a job of
// a tenant with a limit on a lane queue that cannot schedule it
// (queue.NotEnforcedError), so a limit set elsewhere is never bypassed.
//
// # Tenants and groups
//
// With Options.Scheduler, a store that schedules by tenant and by group
// (redisqueue in production, on the Redis that keeps the RedisRecorder),
// every job that names a Tenant or a Group is the Scheduler's: Enqueue
// stores it there, Lease takes it from there beside the broker's
// deliveries (each in turn first, so neither starves the other), and its
// transitions, Get and Cancel go there by its id ("g" and the Scheduler's
// id). The lane's Tenants and Groups parts are the Scheduler's. So the
// tenant limit with its waiting backlog, the fair order and weights,
// backlog caps, MaxWait, pauses, group limits, crawl delays, TTLs and the
// completion job enqueued exactly once follow the Scheduler's rules, which
// the conformance suite checks on every store, and a slot is the job's
// lease there: it frees when the job leaves active, or when its lease
// expires and RescueExpired (every Worker runs it) takes the job back. A
// slot is never counted twice, because the job's lease is the only record
// of it, and never leaked, because a dead worker's lease expires. Jobs
// without a tenant or a group go through the broker as before; a queue
// paused through the lane also stops the lane consuming it (a pause made
// by another process is seen within pauseRefresh).
//
// Why not Firecrawl's arrangement, a limiter in Redis in front of the
// broker that publishes a job when its team has a free slot? There the
// slot (an entry in a Redis set) and the job (a message in the broker)
// are two records written by separate steps: a crash between the count
// and the publish, or between the ack and the release, leaks a slot or
// double counts it, unless every slot entry carries a timeout after which
// it is dropped, which in turn lets a job that runs longer than the
// timeout go uncounted and the team pass its limit. Fair order, weights
// and crawl delays would need the same scheduler again in front of the
// broker, and a job still passes through the broker after it was admitted:
// a publish, a delivery and an ack on top of the scheduler's own writes,
// which a limit needs at admission, at start and at the end anyway. Keeping
// a scheduled job in one store for its whole life makes each of its steps
// one atomic, fenced write, with the semantics every store already has;
// the cost is that scheduled jobs run at the Scheduler's pace rather than
// the broker's (see docs/benchmarks.md), while unscheduled ones keep the
// broker's.
//
// # Job status
//
// The broker forgets a job once it is acknowledged, so the backend records
// each transition in a Recorder for Get: by default a MemoryRecorder in
// the process (bounded by count, bytes and retention), or a RedisRecorder
// shared by every process. Get of a job the recorder never saw, or no
// longer keeps, is queue.ErrNotFound.
package amqpqueue
