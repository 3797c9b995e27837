// Package backend holds what writing a queue.Backend needs and using one
// does not: the arithmetic of the tenant scheduler's fair order, event ids
// for an outbox, and the error of a call a backend cannot serve.
//
// A backend's contract is written in package queue (queue.Backend and the
// optional parts a backend names in its queue.Features: TenantBackend,
// GroupBackend, Outbox, ...); package queue/queuetest is the conformance
// suite that checks it. A backend declares what it has in one place, its
// Features method:
//
//	func (b *Store) Features() queue.Features {
//		f := queue.Features{Name: "mystore", Capabilities: queue.NewCapabilities(queue.CapDelay)}
//		if b.notifies {
//			f.Notify = b // b has Subscribe
//		}
//		return f
//	}
//
// Everything else (Client, Worker, the server, routers) asks those
// Features, so a part a backend leaves out is refused with a
// *queue.UnsupportedError naming the backend, never silently skipped.
package backend
