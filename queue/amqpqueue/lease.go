package amqpqueue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// held is a delivery handed to a worker: the lease. Its deadline is local
// (a delivery has none at the broker): the broker takes the job back only
// when the consuming channel dies.
type held struct {
	job   *queue.Job // State active; guarded by Backend.hmu
	tag   uint64
	inst  *instance
	token string
}

// Lease hands out up to req.Max buffered deliveries from req.Queues, taking
// from each queue in turn. The first call for a queue starts consuming it,
// so it may return nothing; with Options.LeaseWait it waits that long for
// deliveries. Each job comes with a token naming its consumer channel and
// delivery tag.
//
// On the way, deliveries that must not run are dealt with: one that came
// back more than MaxRedeliveries times goes to the dead-letter queue, and
// one not yet due (a long delay served in hops) goes to its next delay
// queue. In priority mode (classic queues, which do not count
// redeliveries) a redelivered message is first published again with its
// count raised.
//
// With a Scheduler, Lease also leases the Scheduler's jobs of req.Queues
// (see leaseBoth), and a paused queue is not consumed.
func (b *Backend) Lease(ctx context.Context, req backend.LeaseRequest) ([]queue.Lease, error) {
	if b.closed.Load() {
		return nil, queue.ErrClosed
	}
	if err := checkLease(req); err != nil {
		return nil, err
	}
	if b.sched != nil {
		return b.leaseBoth(ctx, req) // scheduled.go
	}
	cons := b.consumersFor(req.Queues)
	out := b.take(ctx, cons, req, nil)
	if len(out) >= req.Max || b.opts.LeaseWait <= 0 {
		return out, nil
	}
	return b.await(ctx, cons, req, out), nil
}

func (b *Backend) consumersFor(queues []string) []*consumer {
	cons := make([]*consumer, len(queues))
	for i, q := range queues {
		cons[i] = b.consumerFor(q)
	}
	return cons
}

// await waits up to LeaseWait for deliveries until out holds req.Max.
func (b *Backend) await(ctx context.Context, cons []*consumer, req backend.LeaseRequest, out []queue.Lease) []queue.Lease {
	wake, stop := b.Subscribe(req.Queues)
	defer stop()
	t := time.NewTimer(b.opts.LeaseWait)
	defer t.Stop()
	for len(out) < req.Max {
		select {
		case <-wake:
		case <-t.C:
			return b.take(ctx, cons, req, out)
		case <-ctx.Done():
			return out
		}
		out = b.take(ctx, cons, req, out)
	}
	return out
}

func checkLease(req backend.LeaseRequest) error {
	switch {
	case len(req.Queues) == 0:
		return invalid("LeaseRequest.Queues", "must name at least one queue")
	case req.Max < 1:
		return invalid("LeaseRequest.Max", "must be at least 1, got %d", req.Max)
	case req.LeaseFor <= 0:
		return invalid("LeaseRequest.LeaseFor", "must be positive, got %s", req.LeaseFor)
	}
	return nil
}

// take appends buffered deliveries to out, round robin over cons, until
// req.Max or the buffers are empty.
func (b *Backend) take(ctx context.Context, cons []*consumer, req backend.LeaseRequest, out []queue.Lease) []queue.Lease {
	for len(out) < req.Max {
		got := false
		for _, c := range cons {
			if len(out) >= req.Max {
				break
			}
			d := c.next()
			if d == nil {
				continue
			}
			got = true
			if l, ok := b.admit(ctx, c.queue, d, req); ok {
				out = append(out, l)
			}
		}
		if !got {
			break
		}
	}
	return out
}

// admit turns a delivery into a lease, or deals with it and reports false.
func (b *Backend) admit(ctx context.Context, q string, d *delivery, req backend.LeaseRequest) (queue.Lease, bool) {
	if d.inst.dead.Load() {
		return queue.Lease{}, false // the broker has taken it back already
	}
	j, err := decode(&d.d, q)
	if err != nil {
		bad := &queue.Job{ID: d.d.MessageId, JobSpec: queue.JobSpec{Queue: q, Kind: d.d.Type, Payload: d.d.Body}}
		b.bounce(ctx, d, bad, err.Error())
		return queue.Lease{}, false
	}
	now := b.clk.Now()
	if b.opts.Priorities > 0 && d.d.Redelivered {
		j.Stalls++
		b.move(ctx, d, j, b.mainSpec(q))
		return queue.Lease{}, false
	}
	if j.Stalls > b.opts.MaxRedeliveries {
		b.bounce(ctx, d, j, fmt.Sprintf("amqpqueue: redelivered %d times without being acknowledged (more than MaxRedeliveries %d): its workers keep dying or losing it",
			j.Stalls, b.opts.MaxRedeliveries))
		return queue.Lease{}, false
	}
	if j.RunAt.After(now) {
		b.move(ctx, d, j, b.delaySpec(q, b.bucket(j.RunAt.Sub(now))))
		return queue.Lease{}, false
	}
	j.State = queue.StateActive
	j.Attempt++
	j.WorkerID = req.WorkerID
	j.StartedAt, j.UpdatedAt = now, now
	j.LeaseUntil = now.Add(req.LeaseFor)
	h := &held{job: j, tag: d.d.DeliveryTag, inst: d.inst}
	h.token = strconv.FormatUint(d.inst.id, 10) + "." + strconv.FormatUint(h.tag, 10)
	c := *j
	b.hmu.Lock()
	b.held[h.token] = h
	b.byID[j.ID] = h
	b.hmu.Unlock()
	if !b.memRec {
		// A MemoryRecorder serves only this process, whose Get finds
		// running jobs among the leases: recording them is for other
		// processes' sake.
		b.record(&c)
	}
	return queue.Lease{Job: &c, Token: h.token}, true
}

// move publishes the job again to another broker queue, then acknowledges
// the delivery; if publishing fails the delivery is handed back to the
// broker instead.
func (b *Backend) move(ctx context.Context, d *delivery, j *queue.Job, to qspec) {
	if err := b.republish(ctx, d.inst, j, to); err != nil {
		b.log.Warn("amqpqueue: could not move job; handing it back", "job", j.ID, "to", to.name, "err", err)
		_ = d.inst.nack(d.d.DeliveryTag)
		return
	}
	_ = d.inst.ack(d.d.DeliveryTag)
}

// bounce sends the job to its queue's dead-letter queue with the reason,
// records it failed, and acknowledges the delivery.
func (b *Backend) bounce(ctx context.Context, d *delivery, j *queue.Job, reason string) {
	now := b.clk.Now()
	j.State, j.FinishedAt, j.UpdatedAt = queue.StateFailed, now, now
	addError(j, reason, now)
	if err := b.deadLetter(ctx, d.inst, j, reason); err != nil {
		b.log.Warn("amqpqueue: could not dead-letter job; handing it back", "job", j.ID, "err", err)
		_ = d.inst.nack(d.d.DeliveryTag)
		return
	}
	_ = d.inst.ack(d.d.DeliveryTag)
	b.log.Warn("amqpqueue: job dead-lettered", "job", j.ID, "queue", j.Queue, "reason", reason)
	b.record(j)
}

// republish publishes j to a broker queue, giving up if the delivery's
// channel dies meanwhile (the broker would redeliver the original).
func (b *Backend) republish(ctx context.Context, in *instance, j *queue.Job, to qspec) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-in.gone:
			cancel(errStopped)
		case <-ctx.Done():
		}
	}()
	return b.pubs.publish(ctx, []outMsg{{to: to, pub: b.publishing(j)}})
}

// deadLetter publishes j to its dead-letter queue with the reason.
func (b *Backend) deadLetter(ctx context.Context, in *instance, j *queue.Job, reason string) error {
	m := b.publishing(j)
	m.Headers[hReason] = reason
	m.Headers[hFailedAt] = j.FinishedAt.UnixNano()
	m.Headers[hQueue] = j.Queue
	m.Priority = 0
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-in.gone:
			cancel(errStopped)
		case <-ctx.Done():
		}
	}()
	return b.pubs.publish(ctx, []outMsg{{to: b.deadSpec(j.Queue), pub: m}})
}

// addError appends an attempt error, keeping the newest MaxErrorHistory.
// It never writes into a backing array shared with another snapshot.
func addError(j *queue.Job, msg string, at time.Time) {
	errs := append(slices.Clip(j.Errors), queue.AttemptError{Attempt: j.Attempt, At: at, Error: msg})
	if n := len(errs) - queue.MaxErrorHistory; n > 0 {
		errs = errs[n:]
	}
	j.Errors, j.LastError = errs, msg
}

// bucket picks the delay queue for a remaining delay d: the largest bucket
// not longer than d, or the smallest when d is shorter than all. A job
// that comes out of a bucket before its RunAt is moved to the next one.
func (b *Backend) bucket(d time.Duration) time.Duration {
	bs := b.opts.DelayBuckets
	pick := bs[0]
	for _, x := range bs {
		if x <= d {
			pick = x
		}
	}
	return pick
}

// release removes the lease of token on job id, for a transition. It
// returns queue.ErrLeaseLost when the token holds nothing (finished,
// rescued, or its channel died) and queue.ErrNotFound when the job is
// unknown.
func (b *Backend) release(ctx context.Context, id, token string) (*held, error) {
	if b.closed.Load() {
		return nil, queue.ErrClosed
	}
	b.hmu.Lock()
	h, ok := b.held[token]
	if ok && h.job.ID == id {
		delete(b.held, token)
		delete(b.byID, id)
	}
	b.hmu.Unlock()
	if !ok || h.job.ID != id {
		return nil, b.missing(ctx, id)
	}
	if h.inst.dead.Load() {
		return nil, queue.ErrLeaseLost
	}
	return h, nil
}

// missing says why a lease is not held: the job is known (lease lost) or
// not (not found).
func (b *Backend) missing(ctx context.Context, id string) error {
	b.hmu.Lock()
	_, running := b.byID[id]
	b.hmu.Unlock()
	if running {
		return queue.ErrLeaseLost
	}
	if _, err := b.rec.Lookup(ctx, id); errors.Is(err, queue.ErrNotFound) {
		return queue.ErrNotFound
	}
	return queue.ErrLeaseLost
}

// dropHeld forgets the leases of a dead channel: the broker redelivers
// their jobs.
func (b *Backend) dropHeld(in *instance) {
	now := b.clk.Now()
	var lost []queue.Job
	b.hmu.Lock()
	for tok, h := range b.held {
		if h.inst == in {
			delete(b.held, tok)
			delete(b.byID, h.job.ID)
			lost = append(lost, givenBack(*h.job, now))
		}
	}
	b.hmu.Unlock()
	for i := range lost {
		b.record(&lost[i])
	}
}

// givenBack is j as it waits in the broker again after its holder let go
// without finishing: pending, its attempt returned, one more redelivery.
func givenBack(j queue.Job, now time.Time) queue.Job {
	j.State = queue.StatePending
	j.Attempt--
	j.Stalls++
	j.WorkerID, j.LeaseUntil, j.UpdatedAt = "", time.Time{}, now
	return j
}
