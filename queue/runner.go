package queue

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/internal/handlerctx"
	"github.com/sluicehq/sluice/queue/queuetype"
)

// jobLease is the lease of one running job, shared by its heartbeat and
// ExtendLease calls from the handler.
type jobLease struct {
	b      backend.Backend
	id     string
	token  string
	cancel context.CancelCauseFunc
	work   trace.Span // the attempt's span; nil when tracing is off

	// renew serialises renewals, so that a heartbeat carrying the old
	// length cannot land after ExtendLease and shorten the lease again.
	renew sync.Mutex

	// progress coalesces the handler's progress reports (progress.go).
	progress *progressWriter
	// usage is the job's budget ticket and reported usage; nil when it
	// claimed no budget (budgetjob.go).
	usage *jobUsage

	mu       sync.Mutex
	leaseFor time.Duration
	until    time.Time
	lost     bool
}

// extend renews the lease for d (for the current lease length when d is
// zero); losing it cancels the handler.
func (l *jobLease) extend(ctx context.Context, d time.Duration) (backend.LeaseStatus, error) {
	l.renew.Lock()
	defer l.renew.Unlock()
	if d == 0 {
		l.mu.Lock()
		d = l.leaseFor
		l.mu.Unlock()
	}
	st, err := l.b.Extend(ctx, l.id, l.token, d)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrNotFound):
		l.lost = true
		l.cancel(ErrLeaseLost)
		return st, ErrLeaseLost
	case err != nil:
		return st, err
	}
	l.leaseFor, l.until = d, st.Until
	if st.CancelRequested {
		l.cancel(ErrJobCancelled)
	}
	return st, nil
}

// ExtendLease renews the lease of the job whose handler ctx belongs to, to
// d from now, and makes later heartbeats renew it by d too. Use it before a
// step longer than the worker's LeaseFor. It returns ErrLeaseLost (and the
// handler's context is cancelled) when the job is no longer held, and an
// error when ctx is not a handler's context.
func ExtendLease(ctx context.Context, d time.Duration) error {
	l, ok := handlerctx.Value(ctx).(*jobLease)
	if !ok {
		return errors.New("queue: ExtendLease called outside a job handler")
	}
	if d <= 0 {
		return queuetype.InvalidArgument(Field("", "ExtendLease duration"), "must be positive, got %s", d)
	}
	_, err := l.extend(ctx, d)
	return err
}

type outcome struct {
	result []byte
	err    error
}

// runJob runs one leased job to the end of its attempt. Its slot frees
// when the handler returns, before the outcome is written: the next job
// starts while the store commits this one's end, as a store that batches
// its writes needs for its batches to fill. The write still holds the job
// (and, in the store, its tenant's slot) until it lands; at most
// Concurrency+Prefetch writes are under way at once, so a slow store holds
// the next jobs back rather than piling writes up.
//
// slot, with a Prefetch, is the job's place in the queue for a handler
// slot (fifo.Semaphore.Enter); nil without. usage is the job's budget
// record (admitBudgets), nil when it claimed none.
func (r *run) runJob(ls Lease, slot <-chan struct{}, usage *jobUsage) {
	cfg := r.w.cfg
	job := ls.Job
	ctx, cancel := context.WithCancelCause(r.base)
	defer cancel(nil)
	jl := &jobLease{b: r.w.b, id: job.ID, token: ls.Token, cancel: cancel, leaseFor: cfg.LeaseFor, until: job.LeaseUntil, usage: usage}
	jl.progress = newProgressWriter(r.feats, job.ID, ls.Token, cfg.Clock, cfg.Logger)
	hb := cfg.Clock.NewTimer(r.heartbeatEvery(jl))
	defer func() { hb.Stop() }()
	if slot != nil {
		switch r.awaitSlot(ctx, jl, slot, &hb) {
		case slotGivenBack:
			return
		case slotNone: // lost or cancelled while it waited: no handler runs
			r.settle(jl, job, outcome{err: context.Cause(ctx)}, false)
			return
		}
	}
	hctx := handlerctx.With(ctx, jl)
	hctx, jl.work = r.w.tr.startWork(hctx, job)
	defer endWork(jl.work)

	out := make(chan outcome, 1)
	r.handlers.Add(1)
	go func() {
		defer r.handlers.Done()
		out <- r.callHandler(hctx, job)
	}()

	var timeout <-chan time.Time
	if job.Timeout > 0 {
		t := cfg.Clock.NewTimer(job.Timeout)
		defer t.Stop()
		timeout = t.C()
	}
	for {
		select {
		case o := <-out:
			if cause := context.Cause(ctx); o.err != nil && cause != nil && !errors.Is(o.err, cause) {
				o.err = fmt.Errorf("%w (%v)", o.err, cause)
			}
			r.settle(jl, job, o, slot != nil)
			return
		case <-hb.C():
			r.heartbeat(jl)
			hb = cfg.Clock.NewTimer(r.heartbeatEvery(jl))
		case <-timeout:
			cancel(ErrJobTimeout)
			timeout = nil
		case <-r.stopJobs:
			cancel(ErrWorkerStopped)
			r.handBack(jl, slot != nil)
			return
		}
	}
}

// settle ends an attempt with o: it frees the job's place in the worker
// (and its handler slot, when it holds one), then writes the outcome.
func (r *run) settle(jl *jobLease, job *Job, o outcome, slot bool) {
	jl.progress.close() // the last report lands before the outcome
	if slot {
		r.slots.Release()
	}
	r.writes <- struct{}{}
	r.done <- struct{}{}
	r.finish(jl, job, o)
	<-r.writes
}

// handBack gives a job that will not finish here back to the store, then
// frees its place (and its handler slot, when it holds one).
func (r *run) handBack(jl *jobLease, slot bool) {
	jl.progress.close()
	r.giveBack(jl)
	r.freeSlot(slot)
}

// freeSlot frees a job's place in the worker and, when it holds one, its
// handler slot.
func (r *run) freeSlot(slot bool) {
	if slot {
		r.slots.Release()
	}
	r.done <- struct{}{}
}

// What awaitSlot ended with.
const (
	slotTaken     = iota // the handler may run
	slotGivenBack        // the worker stopped leasing: the job went back
	slotNone             // the job's context ended: lost or cancelled
)

// awaitSlot holds a prefetched job, its lease renewed by hb, until its
// handler slot is granted. A job still waiting when Run's context ends
// goes straight back to pending, as it never started.
func (r *run) awaitSlot(ctx context.Context, jl *jobLease, slot <-chan struct{}, hb *clock.Timer) int {
	for {
		select {
		case <-slot:
			select {
			case <-r.stopping: // granted as the worker stopped: not started
				r.slots.Release()
				r.handBack(jl, false)
				return slotGivenBack
			default:
				return slotTaken
			}
		case <-(*hb).C():
			r.heartbeat(jl)
			*hb = r.w.cfg.Clock.NewTimer(r.heartbeatEvery(jl))
		case <-ctx.Done():
			r.slots.Leave(slot)
			return slotNone
		case <-r.stopping:
			r.slots.Leave(slot)
			r.handBack(jl, false)
			return slotGivenBack
		}
	}
}

func (r *run) heartbeatEvery(jl *jobLease) time.Duration {
	jl.mu.Lock()
	defer jl.mu.Unlock()
	return max(min(r.w.cfg.HeartbeatEvery, jl.leaseFor/3), time.Millisecond)
}

// heartbeat renews the lease. A transient fault is retried on the next
// beat, until the deadline passes: then the lease is presumed lost.
func (r *run) heartbeat(jl *jobLease) {
	jl.mu.Lock()
	until, lost := jl.until, jl.lost
	jl.mu.Unlock()
	if lost {
		return
	}
	_, err := jl.extend(context.Background(), 0)
	if err == nil || errors.Is(err, ErrLeaseLost) {
		return
	}
	r.w.cfg.Logger.Warn("queue: heartbeat failed", "job", jl.id, "err", err)
	if !r.w.cfg.Clock.Now().Before(until) {
		jl.mu.Lock()
		jl.lost = true
		jl.mu.Unlock()
		jl.cancel(ErrLeaseLost)
	}
}

// callHandler runs the job's handler, turning a panic into an error.
func (r *run) callHandler(ctx context.Context, job *Job) (o outcome) {
	h := r.w.handler(job.Kind)
	if h == nil {
		return outcome{err: fmt.Errorf("queue: no handler for kind %q on worker %s", job.Kind, r.w.cfg.ID)}
	}
	defer func() {
		if p := recover(); p != nil {
			o = outcome{err: fmt.Errorf("queue: handler panicked: %v\n%s", p, debug.Stack())}
		}
	}()
	res, err := h.Work(ctx, job)
	return outcome{result: res, err: err}
}

// giveBackTries bounds the tries of a shutdown's Requeue: a store fault of
// the moment (a statement cancelled under it, a dropped connection) gets
// another go at once, as the worker is stopping and cannot wait long.
const giveBackTries = 3

// giveBack puts a running job straight back to pending (shutdown).
func (r *run) giveBack(jl *jobLease) {
	if r.isLost(jl) {
		return
	}
	r.requeue(jl.id, jl.token)
}

// requeue gives a leased job back to pending without spending an attempt
// (shutdown). A job it could not give back stays active until its lease
// expires and a rescue puts it back.
func (r *run) requeue(id, token string) {
	var err error
	for try := 0; try < giveBackTries; try++ {
		_, err = r.w.b.Requeue(context.Background(), id, token)
		if err == nil || errors.Is(err, ErrLeaseLost) || finalOutcomeErr(err) {
			break
		}
	}
	if err != nil && !errors.Is(err, ErrLeaseLost) {
		r.w.cfg.Logger.Error("queue: requeue on shutdown failed", "job", id, "err", err)
	}
}

func (r *run) isLost(jl *jobLease) bool {
	jl.mu.Lock()
	defer jl.mu.Unlock()
	return jl.lost
}
