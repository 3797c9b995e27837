// Package mux places queues on several job backends behind one
// queue.Backend: a router. A deployment keeps its rich queues on SQLite or
// Redis and moves a few high-volume ones to the RabbitMQ lane
// (queue/amqpqueue), while one queue.Client, one queue.Worker and one
// server see them all alike.
//
// # Routing
//
// Each queue is held by exactly one backend: the one whose Route names it,
// else the default. Enqueue splits a batch by queue; Lease splits the
// requested queues by backend; Stats merges; RescueExpired and Cleanup fan
// out. Job ids say where a job lives, so Get, Cancel and the lease calls go
// straight to its backend without asking the others: the default's ids
// are passed through unchanged (a deployment that adds a route keeps its
// existing ids), and a routed backend's ids are its Route.Name, a '.' and
// the backend's own id, such as "rabbitmq.9f31c0d2a4b5e6f71k".
//
// # Atomicity
//
// Every call keeps the atomicity of the backend it reaches, and no more.
// A batch whose queues are all on one backend is stored as that backend
// stores a batch (all or nothing on SQLite and Redis). A batch spread over
// several backends is stored backend by backend: when one fails, the specs
// already stored on the others stay stored, and the error (a
// *queue.PartialError) says which. So the router lacks queue.CapAtomicBatch;
// queue.CapabilitiesFor tells what one queue's backend has.
//
// # Capabilities
//
// Capabilities differ by queue: the router's Features have a Router part,
// and queue.Client checks each spec of an enqueue against the backend
// holding its queue (see queue.Features.CheckSpecs). A spec with a
// UniqueKey for a lane queue gets a *queue.UnsupportedError naming
// amqpqueue; the same spec for a SQLite queue passes. The router's own
// Features are the default's (minus atomic batches), because the features
// that are not tied to one queue (tenant settings, job groups, retries by
// id, the event outbox) are served through the default backend: the router
// names a part only when the default serves it, and its methods for that
// part forward to the default's (a retry goes to the backend the job's id
// names). Events are recorded only for jobs on the default backend, and a
// group's jobs and its completion job belong on the default backend's
// queues (the default enqueues the completion job in its own store).
//
// A tenant's settings and pauses also reach every routed backend that
// schedules by tenant (each enforces them on its own queues). No limit is
// ever accepted and ignored: queue.Client refuses a job of a limited or
// paused tenant on a queue whose backend lacks tenant scheduling, and a
// job of a group the default keeps on a queue of another backend
// (*queue.NotEnforcedError), and queue.Gaps (QueuesOf names the queues)
// says where settings made through the router do not hold.
//
// # Moving a queue
//
// Routing is by name, at the time of the call. A queue moved to another
// backend leaves its unfinished jobs on the old one, where no worker
// leases them any more: drain a queue before moving it. Its finished jobs
// can still be read by id, since the id names their backend.
package mux
