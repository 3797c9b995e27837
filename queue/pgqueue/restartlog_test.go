package pgqueue_test

import (
	"context"
	"sync"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/pgqueue"
)

// runLease is the lease one run of a job ran on: leased is when the lease
// was taken (Job.StartedAt, in Unix nanoseconds), the time the event log
// records for the job's start, which tells the leases apart.
type runLease struct {
	attempt, stalls int
	leased          int64
}

// runLog records every run of TestRestart's handler, and holds the
// handlers at a gate, so the test restarts the server with every slot
// of the worker busy.
type runLog struct {
	mu   sync.Mutex
	runs map[string][]runLease
	from int           // runs of jobs beyond this many wait at gate
	gate chan struct{} // nil: none waits
	held int           // handlers at the gate
}

func newRunLog() *runLog { return &runLog{runs: map[string][]runLease{}} }

// work is the handler: it records the run and waits at the gate, if any,
// once more than from jobs have run.
func (r *runLog) work(ctx context.Context, j *queue.Job) ([]byte, error) {
	r.mu.Lock()
	r.runs[j.ID] = append(r.runs[j.ID], runLease{j.Attempt, j.Stalls, j.StartedAt.UnixNano()})
	gate := r.gate
	if gate != nil && len(r.runs) > r.from {
		r.held++
	} else {
		gate = nil
	}
	r.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
		}
	}
	return nil, nil
}

// holdFrom makes the runs of jobs beyond the first from wait at a new
// gate.
func (r *runLog) holdFrom(from int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.from, r.gate, r.held = from, make(chan struct{}), 0
}

// release lets the handlers at the gate go, and holds those beyond from
// jobs at the next one, or none when from is 0.
func (r *runLog) release(from int) {
	r.mu.Lock()
	close(r.gate)
	r.gate = nil
	r.mu.Unlock()
	if from > 0 {
		r.holdFrom(from)
	}
}

// allHeld is the condition that n handlers wait at the gate.
func (r *runLog) allHeld(n int) func() bool {
	return func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.held >= n
	}
}

// count is how many times job id ran.
func (r *runLog) count(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.runs[id])
}

// leaseWatch is the worker's store, watched: it tells when the worker is
// idle, its last Lease having found nothing (or failed: the worker then
// waits too) and none running.
type leaseWatch struct {
	*pgqueue.Store
	mu      sync.Mutex
	leasing int  // Lease calls running
	empty   bool // the last one to return found no job
}

// Lease implements backend.Backend.
func (w *leaseWatch) Lease(ctx context.Context, req backend.LeaseRequest) ([]queue.Lease, error) {
	w.mu.Lock()
	w.leasing++
	w.mu.Unlock()
	ls, err := w.Store.Lease(ctx, req)
	w.mu.Lock()
	w.leasing--
	w.empty = len(ls) == 0
	w.mu.Unlock()
	return ls, err
}

func (w *leaseWatch) idle() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.leasing == 0 && w.empty
}
