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
// that has not started (or that runs in another process), tenant
// scheduling, groups, strict ordering (a retried job goes to the back),
// delays on the backend's clock, atomic batches, and priorities unless
// Options.Priorities is set. A spec or a call that needs one of them fails
// with an error matching queue.ErrUnsupported, never silently.
//
// # Job status
//
// The broker forgets a job once it is acknowledged, so the backend records
// each transition in a Recorder for Get: by default a MemoryRecorder in
// the process (bounded by count, bytes and retention), or a RedisRecorder
// shared by every process. Get of a job the recorder never saw, or no
// longer keeps, is queue.ErrNotFound.
package amqpqueue
