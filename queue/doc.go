// Package queue runs work later, reliably: durable jobs with priorities,
// delays, retries, unique keys and leases that survive worker crashes.
//
// A Client enqueues and inspects jobs; a Worker leases jobs and runs a
// Handler for each; a store (a backend.Backend) keeps them. Every state
// change is one atomic store operation fenced by the lease token, so a job
// is never finished by a worker that lost it and never left "active"
// without a lease.
//
// Stores: queue/sqlitequeue (an embedded file, the default),
// queue/pgqueue, queue/redisqueue and the RabbitMQ lane queue/amqpqueue;
// queue/mux places queues on several. Each says what it has in its
// Features and passes the conformance suite in queue/queuetest. The
// contract a store implements, and the helpers that writing another needs,
// are in package queue/backend; the data types both sides name (Job,
// JobSpec, State, ...) are defined in queue/queuetype and re-exported
// here, so users of the queue need only this package.
package queue
