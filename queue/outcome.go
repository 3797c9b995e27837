package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluicehq/sluice/queue/backend"
)

// Outcome writes that fail on a store fault are tried again after
// outcomeRetryBase·2^(n−1), capped at outcomeRetryMax, with jitter, until
// the lease's deadline. The cap keeps several tries inside even a short
// lease once the store is back.
const (
	outcomeRetryBase = 100 * time.Millisecond
	outcomeRetryMax  = 2 * time.Second
)

var outcomeBackoff = ExponentialBackoff(outcomeRetryBase, outcomeRetryMax)

// faultLogEvery is the most often a worker logs that an outcome write is
// being retried: a store outage fails every running job's write at once.
const faultLogEvery = 5 * time.Second

// finalOutcomeErr reports whether retrying an outcome write that failed
// with err cannot help: the lease is gone (ErrLeaseLost, ErrNotFound: the
// job was rescued, requeued, finished or deleted), the backend is closed or
// lacks the feature, or the write was refused as invalid. Anything else is
// taken for a store fault that may pass.
func finalOutcomeErr(err error) bool {
	for _, final := range []error{ErrLeaseLost, ErrNotFound, ErrJobFinished, ErrClosed, ErrInvalidArgument, ErrUnsupported} {
		if errors.Is(err, final) {
			return true
		}
	}
	return false
}

// finish records the attempt's outcome with one fenced transition, retried
// through store faults (see record).
func (r *run) finish(jl *jobLease, job *Job, o outcome) {
	if r.isLost(jl) {
		return // someone else holds the job now; its result is not ours to record
	}
	var snooze *SnoozeError
	if err := r.record(jl, r.w.tr.outcome(context.Background(), jl.work, o, r.outcomeWrite(jl, job, o))); err == nil && o.err != nil && !errors.As(o.err, &snooze) {
		r.w.cfg.Logger.Info("queue: attempt failed", "job", jl.id, "kind", job.Kind, "attempt", job.Attempt, "err", o.err)
	}
}

// outcomeWrite returns the fenced write that ends the attempt with o.
func (r *run) outcomeWrite(jl *jobLease, job *Job, o outcome) func(context.Context) error {
	cfg, b := r.w.cfg, r.w.b
	var snooze *SnoozeError
	switch {
	case o.err == nil && len(o.result) > cfg.MaxResult:
		f := backend.Failure{
			Error:     fmt.Sprintf("queue: result of %d bytes is over the %d-byte limit", len(o.result), cfg.MaxResult),
			Permanent: true,
		}
		return func(ctx context.Context) error { _, err := b.Fail(ctx, jl.id, jl.token, f); return err }
	case o.err == nil:
		return func(ctx context.Context) error { return b.Complete(ctx, jl.id, jl.token, o.result) }
	case errors.As(o.err, &snooze):
		return func(ctx context.Context) error { _, err := b.Snooze(ctx, jl.id, jl.token, snooze.Delay); return err }
	}
	// The backoff is drawn once, so every retry of the write asks for the
	// same delay.
	f := backend.Failure{
		Error:     StorableError(o.err.Error()),
		RetryIn:   cfg.Backoff(job.Attempt, o.err),
		Permanent: IsPermanent(o.err),
	}
	return func(ctx context.Context) error { _, err := b.Fail(ctx, jl.id, jl.token, f); return err }
}

// record makes the fenced outcome write and, when it fails on a store
// fault, tries it again with capped exponential backoff (on the worker's
// clock) until it succeeds, fails for good (finalOutcomeErr), the lease's
// last known deadline passes, or the drain after shutdown ends (r.abandon).
// Giving up leaves the job active: it is rescued once its lease expires and
// runs again. The fence makes retrying safe: a write can only land while
// this lease still holds the job. It returns the last error.
func (r *run) record(jl *jobLease, write func(context.Context) error) error {
	clk := r.w.cfg.Clock
	deadline := r.leaseUntil(jl)
	// Nobody waits on the write: the job's slot is free already.
	ctx := BackgroundWrite(context.Background())
	for try := 1; ; try++ {
		err := write(ctx)
		if err == nil || finalOutcomeErr(err) {
			r.logRecorded(jl, try, err)
			return err
		}
		now := clk.Now()
		if !now.Before(deadline) {
			r.logGiveUp(jl, try, err, "the lease ended")
			return err
		}
		wait := min(outcomeBackoff(try, err), deadline.Sub(now))
		r.logRetry(jl, try, err, wait)
		t := clk.NewTimer(wait)
		select {
		case <-t.C():
		case <-r.abandon:
			t.Stop()
			r.logGiveUp(jl, try, err, "the worker stopped")
			return err
		}
	}
}

func (r *run) leaseUntil(jl *jobLease) time.Time {
	jl.mu.Lock()
	defer jl.mu.Unlock()
	return jl.until
}

// logRecorded reports how a write that ended without a fault went, when
// that is news: a final error, or success after retries.
func (r *run) logRecorded(jl *jobLease, tries int, err error) {
	log := r.w.cfg.Logger
	switch {
	case err == nil && tries > 1:
		log.Info("queue: job outcome recorded after a store fault", "job", jl.id, "tries", tries)
	case err != nil && tries > 1 && (errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrNotFound)):
		// An earlier try may have landed with its reply lost: the job is
		// then already in its final state.
		log.Warn("queue: job outcome not recorded on retry: the lease is gone", "job", jl.id, "tries", tries, "err", err)
	case err != nil:
		log.Error("queue: could not record job outcome", "job", jl.id, "err", err)
	}
}

func (r *run) logRetry(jl *jobLease, try int, err error, wait time.Duration) {
	ok, dropped := r.w.faults.allow(r.w.cfg.Clock.Now(), faultLogEvery)
	if !ok {
		return
	}
	r.w.cfg.Logger.Warn("queue: could not record job outcome; retrying", "job", jl.id, "try", try,
		"retry_in", wait, "err", err, "suppressed", dropped)
}

func (r *run) logGiveUp(jl *jobLease, tries int, err error, why string) {
	r.w.cfg.Logger.Error("queue: gave up recording job outcome; the job runs again once its lease expires",
		"job", jl.id, "tries", tries, "because", why, "err", err)
}

// faultLog lets one log line through per interval and counts the ones it
// holds back, so that an outage failing many jobs at once logs a line every
// few seconds rather than one per job per try. The zero value is ready.
type faultLog struct {
	mu      sync.Mutex
	next    time.Time
	dropped int
}

// allow reports whether a line may be logged at now, and how many were
// held back since the last one.
func (f *faultLog) allow(now time.Time, every time.Duration) (bool, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now.Before(f.next) {
		f.dropped++
		return false, 0
	}
	n := f.dropped
	f.next, f.dropped = now.Add(every), 0
	return true, n
}
