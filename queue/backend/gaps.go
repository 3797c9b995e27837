package backend

// QueueLister is served by a Router that can name the queues it places
// on each backend (package queue/mux does); Gaps uses it to name them.
type QueueLister interface {
	// QueuesOf returns the queues named for b, sorted; nil for the
	// default backend, which holds every queue no route names.
	QueuesOf(b Backend) []string
}
