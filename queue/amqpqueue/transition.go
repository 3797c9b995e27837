package amqpqueue

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// Extend renews a lease locally: a delivery has no deadline at the broker
// (which takes a job back only when its consuming channel dies, or after
// the broker's consumer_timeout, 30 minutes by default). The deadline
// matters to RescueExpired in this process, which hands back leases their
// worker stopped renewing. It reports a Cancel made in this process.
func (b *Backend) Extend(ctx context.Context, id, token string, leaseFor time.Duration) (backend.LeaseStatus, error) {
	if sid, ok := b.schedID(id); ok {
		if b.closed.Load() {
			return backend.LeaseStatus{}, queue.ErrClosed
		}
		return b.sched.Extend(ctx, sid, token, leaseFor)
	}
	if b.closed.Load() {
		return backend.LeaseStatus{}, queue.ErrClosed
	}
	now := b.clk.Now()
	b.hmu.Lock()
	h, ok := b.held[token]
	if ok && h.job.ID == id && !h.inst.dead.Load() {
		h.job.LeaseUntil = now.Add(leaseFor)
		st := backend.LeaseStatus{Until: h.job.LeaseUntil, CancelRequested: h.job.CancelRequested}
		b.hmu.Unlock()
		return st, nil
	}
	b.hmu.Unlock()
	return backend.LeaseStatus{}, b.missing(ctx, id)
}

// Complete acknowledges the delivery and records the job completed with
// its result. The ack is handed to the channel's ack loop, which sends it
// coalesced with others within moments; the broker never confirms an
// ack, so if the connection drops before it arrives, the job runs again
// (at least once).
func (b *Backend) Complete(ctx context.Context, id, token string, result []byte) error {
	if sid, ok := b.schedID(id); ok {
		if b.closed.Load() {
			return queue.ErrClosed
		}
		return b.sched.Complete(ctx, sid, token, result)
	}
	h, err := b.release(ctx, id, token)
	if err != nil {
		return err
	}
	if err := h.inst.ack(h.tag); err != nil {
		return fmt.Errorf("amqpqueue: acknowledge job %s: %w", id, err)
	}
	j := finished(*h.job, queue.StateCompleted, b.clk.Now())
	j.Result = result
	b.record(&j)
	return nil
}

// finished is j in final state s.
func finished(j queue.Job, s queue.State, now time.Time) queue.Job {
	j.State, j.FinishedAt, j.UpdatedAt = s, now, now
	j.WorkerID, j.LeaseUntil = "", time.Time{}
	return j
}

// Fail records the error and then: a job cancelled while running is
// acknowledged and ends cancelled; a permanent failure or the last attempt
// goes to the dead-letter queue and ends failed; otherwise the job is
// published again (to the delay queue for f.RetryIn, rounded to the
// buckets, or straight back when RetryIn <= 0) with its attempts and
// error history, and the delivery acknowledged once the broker confirmed.
func (b *Backend) Fail(ctx context.Context, id, token string, f backend.Failure) (queue.State, error) {
	f.Error = queue.StorableError(f.Error)
	if sid, ok := b.schedID(id); ok {
		if b.closed.Load() {
			return "", queue.ErrClosed
		}
		return b.sched.Fail(ctx, sid, token, f)
	}
	h, err := b.release(ctx, id, token)
	if err != nil {
		return "", err
	}
	now := b.clk.Now()
	j := *h.job
	addError(&j, f.Error, now)
	switch {
	case j.CancelRequested:
		return b.end(h, finished(j, queue.StateCancelled, now))
	case f.Permanent || j.Attempt >= j.MaxAttempts:
		j = finished(j, queue.StateFailed, now)
		if err := b.deadLetter(ctx, h.inst, &j, f.Error); err != nil {
			return "", b.giveUp(h, err)
		}
		return b.end(h, j)
	}
	j.State, j.UpdatedAt = queue.StateRetrying, now
	j.WorkerID, j.LeaseUntil = "", time.Time{}
	j.RunAt = now.Add(f.RetryIn)
	return b.resend(ctx, h, j, f.RetryIn)
}

// Snooze publishes the job again to run after d (straight back when
// d <= 0) without spending the attempt, then acknowledges the delivery.
// A job cancelled while running ends cancelled instead.
func (b *Backend) Snooze(ctx context.Context, id, token string, d time.Duration) (queue.State, error) {
	if sid, ok := b.schedID(id); ok {
		if b.closed.Load() {
			return "", queue.ErrClosed
		}
		return b.sched.Snooze(ctx, sid, token, d)
	}
	h, err := b.release(ctx, id, token)
	if err != nil {
		return "", err
	}
	now := b.clk.Now()
	j := *h.job
	if j.CancelRequested {
		return b.end(h, finished(j, queue.StateCancelled, now))
	}
	j.Attempt--
	j.State, j.UpdatedAt = queue.StateScheduled, now
	j.WorkerID, j.LeaseUntil = "", time.Time{}
	j.RunAt = now.Add(d)
	if d <= 0 {
		j.State = queue.StatePending
	}
	return b.resend(ctx, h, j, d)
}

// resend publishes j (waiting for delay, if positive) and acknowledges the
// held delivery. j is recorded before it is published: once published,
// another consumer may lease it and record a later state, which a record
// made afterwards would overwrite.
func (b *Backend) resend(ctx context.Context, h *held, j queue.Job, delay time.Duration) (queue.State, error) {
	to := b.mainSpec(j.Queue)
	if delay > 0 {
		to = b.delaySpec(j.Queue, b.bucket(delay))
	}
	b.record(&j)
	if err := b.republish(ctx, h.inst, &j, to); err != nil {
		return "", b.giveUp(h, err)
	}
	if err := h.inst.ack(h.tag); err != nil {
		return "", fmt.Errorf("amqpqueue: acknowledge job %s: %w", j.ID, err)
	}
	return j.State, nil
}

// end acknowledges the held delivery and records j as its outcome.
func (b *Backend) end(h *held, j queue.Job) (queue.State, error) {
	if err := h.inst.ack(h.tag); err != nil {
		return "", fmt.Errorf("amqpqueue: acknowledge job %s: %w", j.ID, err)
	}
	b.record(&j)
	return j.State, nil
}

// giveUp hands a delivery back to the broker after a failed publish, so
// that the job runs again rather than stay unacknowledged, and returns the
// publish error.
func (b *Backend) giveUp(h *held, err error) error {
	j := givenBack(*h.job, b.clk.Now())
	b.record(&j) // before the nack, which lets another consumer lease it
	_ = h.inst.nack(h.tag)
	return fmt.Errorf("amqpqueue: job %s handed back to the broker: %w", j.ID, err)
}

// Requeue hands the delivery back to the broker (nack with requeue), which
// puts the job back in its queue at once, without spending the attempt.
// The broker counts it as a redelivery (Stalls + 1). A job cancelled while
// running is acknowledged and ends cancelled instead.
func (b *Backend) Requeue(ctx context.Context, id, token string) (queue.State, error) {
	if sid, ok := b.schedID(id); ok {
		if b.closed.Load() {
			return "", queue.ErrClosed
		}
		return b.sched.Requeue(ctx, sid, token)
	}
	h, err := b.release(ctx, id, token)
	if err != nil {
		return "", err
	}
	now := b.clk.Now()
	if h.job.CancelRequested {
		return b.end(h, finished(*h.job, queue.StateCancelled, now))
	}
	j := givenBack(*h.job, now)
	b.record(&j) // before the nack, which lets another consumer lease it
	if err := h.inst.nack(h.tag); err != nil {
		return "", fmt.Errorf("amqpqueue: hand back job %s: %w", id, err)
	}
	return j.State, nil
}

// RescueExpired hands back to the broker the leases of this process whose
// deadline has passed (their worker stopped renewing them), as Requeue
// does; a job whose stall count reaches req.MaxStalls goes to the
// dead-letter queue instead, and one cancelled while running ends
// cancelled. Leases of other processes are not visible here: the broker
// redelivers their jobs when their process dies.
func (b *Backend) RescueExpired(ctx context.Context, req backend.RescueRequest) (backend.RescueResult, error) {
	var res backend.RescueResult
	if b.closed.Load() {
		return res, queue.ErrClosed
	}
	maxStalls := req.MaxStalls
	if maxStalls <= 0 {
		maxStalls = queue.DefaultMaxStalls
	}
	for _, h := range b.expired(req) {
		now := b.clk.Now()
		j := givenBack(*h.job, now)
		switch {
		case j.CancelRequested:
			if _, err := b.end(h, finished(j, queue.StateCancelled, now)); err == nil {
				res.Cancelled++
			}
		case j.Stalls >= maxStalls:
			msg := fmt.Sprintf("amqpqueue: stalled %d times (its lease expired without the worker finishing)", j.Stalls)
			addError(&j, msg, now)
			j = finished(j, queue.StateFailed, now)
			if err := b.deadLetter(ctx, h.inst, &j, msg); err != nil {
				return res, b.giveUp(h, err)
			}
			if _, err := b.end(h, j); err == nil {
				res.Failed++
			}
		default:
			b.record(&j) // before the nack, which lets another consumer lease it
			if err := h.inst.nack(h.tag); err == nil {
				res.Requeued++
			}
		}
	}
	if b.sched != nil {
		return b.rescueScheduled(ctx, req, res) // scheduled.go
	}
	return res, nil
}

// expired removes and returns the expired leases that req selects.
func (b *Backend) expired(req backend.RescueRequest) []*held {
	limit := req.Limit
	if limit <= 0 {
		limit = backend.DefaultBatchLimit
	}
	want := make(map[string]bool, len(req.Queues))
	for _, q := range req.Queues {
		want[q] = true
	}
	now := b.clk.Now()
	b.hmu.Lock()
	defer b.hmu.Unlock()
	var out []*held
	for tok, h := range b.held {
		if len(out) >= limit {
			break
		}
		if (len(want) == 0 || want[h.job.Queue]) && h.job.LeaseUntil.Before(now) && !h.inst.dead.Load() {
			delete(b.held, tok)
			delete(b.byID, h.job.ID)
			out = append(out, h)
		}
	}
	return out
}
