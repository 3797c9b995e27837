package backend

import "github.com/sluicehq/sluice/queue/queuetype"

// Router is the part of a backend that places each queue on one of several
// backends (package queue/mux), served through Features.Router.
// Capability checks that concern one queue ask the backend that holds it:
// a spec for a queue on a lane that lacks unique keys is refused, while the
// same spec for a queue on SQLite passes.
type Router interface {
	// Route returns the backend that holds queue's jobs.
	Route(queue string) Backend
	// Backends returns every backend routed to, each once, the default
	// (the one holding unnamed queues) first.
	Backends() []Backend
}

// Placed returns the backend that holds queue's jobs: b's route for it when
// b has a Router (followed through nested routers), else b itself.
func Placed(b Backend, queue string) Backend {
	for {
		r := b.Features().Router
		if r == nil {
			return b
		}
		next := r.Route(queue)
		if next == nil || next == b {
			return b
		}
		b = next
	}
}

// CapabilitiesFor returns the capabilities of the backend that holds
// queue's jobs (b itself, or b's route for queue; see CapabilitiesOf).
func CapabilitiesFor(b Backend, queue string) queuetype.Capabilities {
	return CapabilitiesOf(Placed(b, queue))
}

// CommonCapabilities returns what every queue of b has: for a router, its
// own capabilities as far as every routed backend shares them (a router may
// lack some, such as atomic batches over several backends); for any other
// backend, CapabilitiesOf.
func CommonCapabilities(b Backend) queuetype.Capabilities {
	f := b.Features()
	caps := f.Effective()
	if f.Router == nil {
		return caps
	}
	for _, inner := range f.Router.Backends() {
		if inner != b {
			caps &= CommonCapabilities(inner)
		}
	}
	return caps
}
