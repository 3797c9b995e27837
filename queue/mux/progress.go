package mux

import (
	"context"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// watchParts sets the router's progress and event log parts: progress
// when any route records it (a job on a route without it is answered
// ErrUnsupported), and the default backend's event log, which holds the
// events of the default's jobs only: Client.Wait polls the jobs of the
// other routes (see queue.Client.Wait).
func (m *Backend) watchParts(f *backend.Features) {
	for _, r := range m.routes {
		if r.b.Features().Progress != nil {
			f.Progress = m
			break
		}
	}
	f.Events = m.Default().Features().Events
}

// SetProgress forwards to the backend of the job's route.
func (m *Backend) SetProgress(ctx context.Context, id, token string, p queue.JobProgress) error {
	r, inner := m.locate(id)
	f := r.b.Features()
	if f.Progress == nil {
		return backend.Unsupported(f.Name, queue.CapProgress)
	}
	return r.wrap(f.Progress.SetProgress(ctx, inner, token, p))
}
