// Package backend is the contract a job store implements, and what writing
// one needs and using one does not.
//
// The contract is Backend, the interface every store (sqlitequeue,
// pgqueue, redisqueue, amqpqueue, mux's router) implements, with the
// requests and results of its methods (LeaseRequest, RescueRequest,
// CleanupRequest, ...), and the optional parts a store names in its
// Features: TenantBackend, TenantLister, GroupBackend, FlowBackend,
// Retrier, ScheduleStore, ProgressBackend, Outbox, EventLog, Notifier,
// TenantSecrets and Router. Beside it are the helpers: the arithmetic of
// the tenant scheduler's fair order, event ids for an outbox, the errors
// of a call a store refuses, and where a routed queue is held (Placed,
// CapabilitiesFor).
//
// The data the contract speaks of (Job, JobSpec, Lease, State,
// TenantConfig, the errors ErrNotFound, ErrLeaseLost, ...) is in the leaf
// package queue/queuetype, which package queue re-exports: a store may
// write queue.Job or queuetype.Job, they are the same type. Users of the
// queue name this package only to hold a store (queue.NewClient takes a
// Backend); they work through queue.Client and queue.Worker.
//
// # Writing a backend
//
// Implement Backend, following the rules in its documentation (each
// method one atomic step, fenced by the lease token, on the store's own
// clock), and declare what the store has in one place, its Features
// method. A part is there when its field is set; its capability follows:
//
//	func (b *Store) Features() backend.Features {
//		f := backend.Features{Name: "mystore", Capabilities: queue.NewCapabilities(queue.CapDelay)}
//		if b.notifies {
//			f.Notify = b // b has Subscribe
//		}
//		return f
//	}
//
// Everything else (Client, Worker, the server, routers) asks those
// Features, so a part a store leaves out is refused with a
// *queue.UnsupportedError naming the store, never silently skipped. A
// method a store has only to satisfy the interface returns Unsupported.
// Then prove it: run queuetest.Run (package queue/queuetest, the
// conformance suite) from the store's tests; it checks the declaration
// too. examples/backendkit in the repository is a complete in-memory
// store written this way, outside the module.
package backend
