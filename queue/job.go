// Package queue runs work later, reliably: durable jobs with priorities,
// delays, retries, unique keys and leases that survive worker crashes.
//
// A Client enqueues and inspects jobs; a Worker leases jobs and runs a
// Handler for each; a Backend stores them. Every state change is one atomic
// Backend operation fenced by the lease token, so a job is never finished by
// a worker that lost it and never left "active" without a lease.
//
// Backends: queue/sqlitequeue (an embedded file, the default),
// queue/redisqueue and the RabbitMQ lane queue/amqpqueue; queue/mux places
// queues on several. Each says what it has in its Features and passes the
// conformance suite in queue/queuetest. Writing another takes the helpers
// in queue/backend and nothing internal to this module.
package queue
