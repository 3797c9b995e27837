package queue

import (
	"context"
	"sync"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/fifo"
	"github.com/sluicehq/sluice/queue/backend"
)

// run is one Run call's state.
type run struct {
	w     *Worker
	feats backend.Features // the backend's, read once
	// base is the parent of every handler context: it keeps Run's values
	// but not its cancellation, so in-flight jobs outlive the stop signal
	// for the grace period.
	base     context.Context
	stopJobs chan struct{} // closed when the grace period is over
	abandon  chan struct{} // closed when the drain after it is over too
	done     chan struct{} // a job's handler returned and freed its slot
	// writes bounds the outcome writes still under way after their jobs
	// freed their slots (see run.settle).
	writes chan struct{}
	// slots, with a Prefetch, grants the handler slots in lease order,
	// which is the store's (priority, then enqueue order), so a job leased
	// first starts first: the worker holds up to Concurrency+Prefetch jobs
	// and runs Concurrency of them. Nil without a Prefetch, where the two
	// counts are one.
	slots *fifo.Semaphore
	// stopping is Run's ctx.Done(): prefetched jobs still waiting for a
	// slot when it closes go back at once.
	stopping <-chan struct{}
	jobs     sync.WaitGroup
	handlers sync.WaitGroup
	inflight int // jobs held: running, waiting for a slot, or settling
	held     int // the most jobs held at once: Concurrency+Prefetch
	// leaseAt is how many places must be free before the worker leases:
	// 1, or half the Prefetch (rounded up). With fewer free, more than
	// half the Prefetch is in hand waiting for slots, so no slot idles
	// while the worker waits to lease more at once; leasing for each place
	// as it freed made leases of a few jobs each when busy, and paid a
	// lease's fixed cost in the store that many times more.
	leaseAt int
}

func newRun(w *Worker) *run {
	held := w.cfg.Concurrency + w.cfg.Prefetch
	r := &run{
		w:        w,
		feats:    w.b.Features(),
		held:     held,
		leaseAt:  max(1, (w.cfg.Prefetch+1)/2),
		base:     context.Background(),
		stopJobs: make(chan struct{}),
		abandon:  make(chan struct{}),
		done:     make(chan struct{}, held),
		writes:   make(chan struct{}, held),
	}
	if w.cfg.Prefetch > 0 {
		r.slots = fifo.New(w.cfg.Concurrency)
	}
	return r
}

// fetchLoop leases jobs while there are free slots and ctx lasts.
func (r *run) fetchLoop(ctx context.Context) {
	r.base, r.stopping = context.WithoutCancel(ctx), ctx.Done()
	cfg := r.w.cfg
	var wake <-chan struct{}
	if n := r.feats.Notify; n != nil {
		ch, stop := n.Subscribe(cfg.Queues)
		defer stop()
		wake = ch
	}
	// With a LeaseCooldown, the start of the last lease that left slots
	// free; zero otherwise.
	var last time.Time
	for ctx.Err() == nil {
		r.reap()
		if free := r.held - r.inflight; free >= r.leaseAt && !r.w.holdLeasing() {
			if !last.IsZero() {
				if !r.coolDown(ctx, last) {
					return
				}
				last = time.Time{}
				r.reap() // slots freed during the wait
				free = r.held - r.inflight
			}
			var start time.Time
			if cfg.LeaseCooldown > 0 {
				start = cfg.Clock.Now()
			}
			got, err := r.lease(ctx, free)
			if err == nil && got == free {
				continue // there may be more ready right now
			}
			last = start
		}
		r.idle(ctx, wake)
	}
}

// coolDown waits until LeaseCooldown has passed since last, and reports
// whether ctx still lasts.
func (r *run) coolDown(ctx context.Context, last time.Time) bool {
	cfg := r.w.cfg
	d := last.Add(cfg.LeaseCooldown).Sub(cfg.Clock.Now())
	if d <= 0 {
		return true
	}
	t := cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// reap counts finished jobs without blocking.
func (r *run) reap() {
	for {
		select {
		case <-r.done:
			r.inflight--
		default:
			return
		}
	}
}

// idle waits for a reason to look for work again: a slot freed, a
// notification, the poll interval, or the end of ctx.
func (r *run) idle(ctx context.Context, wake <-chan struct{}) {
	t := r.w.cfg.Clock.NewTimer(r.w.cfg.PollInterval)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-r.done:
		r.inflight--
	case <-wake:
	case <-t.C():
	}
}

func (r *run) lease(ctx context.Context, max int) (int, error) {
	cfg := r.w.cfg
	var start time.Time
	if r.w.tr != nil {
		start = time.Now() // wall time: a span's, not a timer
	}
	lctx, cancel := leaseContext(ctx)
	defer cancel()
	leases, err := r.w.b.Lease(lctx, backend.LeaseRequest{Queues: cfg.Queues, WorkerID: cfg.ID, Max: max, LeaseFor: cfg.LeaseFor})
	if err != nil {
		if ctx.Err() == nil {
			cfg.Logger.Error("queue: lease failed", "worker", cfg.ID, "err", err)
		}
		return 0, err
	}
	if ctx.Err() != nil { // stopped while the store was leasing
		for _, l := range leases {
			r.requeue(l.Job.ID, l.Token)
		}
		return 0, ctx.Err()
	}
	for _, l := range leases {
		r.w.tr.lease(l.Job, cfg.ID, start)
		if !r.w.admitStart(l) {
			continue // over a start rate: given back to wait
		}
		usage, ok := r.admitBudgets(l)
		if !ok {
			continue // held by a budget: given back to wait
		}
		r.inflight++
		r.jobs.Add(1)
		var slot <-chan struct{}
		if r.slots != nil {
			slot = r.slots.Enter() // here, in lease order
		}
		go func() {
			defer r.jobs.Done()
			if err := withParents(ctx, r.w.b, l.Job); err != nil {
				cfg.Logger.Error("queue: read parents' results", "job", l.Job.ID, "err", err)
			}
			r.runJob(l, slot, usage)
			r.settleBudgets(l.Job, usage)
		}()
	}
	return len(leases), nil
}

// shutdown waits for in-flight jobs for the grace period, then makes them
// give their jobs back and waits, at most one more ShutdownTimeout (the
// drain), for their runners and handlers. A runner still retrying its
// outcome write when the drain ends gives up.
func (r *run) shutdown() {
	cfg := r.w.cfg
	if waitFor(&r.jobs, cfg.Clock, cfg.ShutdownTimeout) {
		return
	}
	close(r.stopJobs)
	drain := cfg.Clock.NewTimer(cfg.ShutdownTimeout)
	defer drain.Stop()
	over := false
	select {
	case <-doneChan(&r.jobs):
	case <-drain.C():
		over = true
		close(r.abandon)
		r.jobs.Wait() // runners return at once when abandoned
	}
	handlers := doneChan(&r.handlers)
	if !over {
		select {
		case <-handlers:
			return
		case <-drain.C():
		}
	}
	select {
	case <-handlers:
	default:
		cfg.Logger.Warn("queue: handlers ignored cancellation; abandoned", "worker", cfg.ID)
	}
}

// doneChan returns a channel closed once wg is done.
func doneChan(wg *sync.WaitGroup) <-chan struct{} {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	return ch
}

// waitFor waits for wg up to d and reports whether it finished.
func waitFor(wg *sync.WaitGroup, clk clock.Clock, d time.Duration) bool {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-doneChan(wg):
		return true
	case <-t.C():
		return false
	}
}

// leaseCallDrain bounds how long a lease call under way when the worker
// stops may still take. Real time: it bounds a store call, not a job.
const leaseCallDrain = 5 * time.Second

// leaseContext returns the context of a lease call: it outlives ctx by up
// to leaseCallDrain. A call cut off by the stop can still take jobs in the
// store — its statement or script was sent and runs to the end there —
// and then no one would run them until their leases expired; a call that
// is let finish hands them over, and lease gives them straight back.
func leaseContext(ctx context.Context) (context.Context, context.CancelFunc) {
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(leaseCallDrain, cancel)
		context.AfterFunc(lctx, func() { t.Stop() })
	})
	return lctx, func() { stop(); cancel() }
}
