package amqpqueue

import (
	"context"
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// List lists jobs only where the listing is whole: the broker cannot list
// the messages inside a queue, so it answers for the Scheduler's jobs
// alone (Options.Scheduler: jobs with a tenant or a group, and group
// completion jobs), and only when the filter can match no other job:
//
//   - f.Tenant or f.Group is set: every such job is the Scheduler's;
//   - f.Queue names a queue the broker holds no job of: its main, delay
//     and dead-letter queues are empty or absent, nothing but this
//     process consumes it, and this process holds none of its jobs.
//
// Anything else is an error matching queue.ErrUnsupported (the lane
// lacks queue.CapList).
func (b *Backend) List(ctx context.Context, f queue.ListFilter) (*queue.Page, error) {
	if b.closed.Load() {
		return nil, queue.ErrClosed
	}
	if b.sched == nil {
		return nil, backend.Unsupported(name, queue.CapList)
	}
	whole := f.Tenant != "" || f.Group != ""
	if !whole && f.Queue != "" {
		empty, err := b.brokerEmpty(ctx, f.Queue)
		if err != nil {
			return nil, err
		}
		whole = empty
	}
	if !whole {
		return nil, backend.Unsupported(name, queue.CapList)
	}
	p, err := b.sched.List(ctx, f)
	if err != nil {
		return nil, err
	}
	for i, j := range p.Jobs {
		p.Jobs[i] = outer(j)
	}
	return p, nil
}

// brokerEmpty reports whether the broker holds no job of lane queue q
// (see List).
func (b *Backend) brokerEmpty(ctx context.Context, q string) (bool, error) {
	local := statCounts{}
	b.localCounts(local)
	if len(local[q]) > 0 {
		return false, nil
	}
	ours := 0
	b.cmu.Lock()
	if _, ok := b.consumers[q]; ok {
		ours = b.opts.Consumers
	}
	b.cmu.Unlock()
	names := []string{b.mainName(q), b.deadName(q)}
	for _, d := range b.opts.DelayBuckets {
		names = append(names, b.delayName(q, d))
	}
	for i, n := range names {
		msgs, cons, err := b.topo.census(ctx, n)
		if err != nil {
			return false, err
		}
		if msgs > 0 || (i == 0 && cons > ours) {
			return false, nil
		}
	}
	return true, nil
}

// census returns the ready messages and the consumers of a broker queue;
// zero for a queue that does not exist.
func (t *topology) census(ctx context.Context, name string) (msgs, consumers int, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ch, _, err := t.channel(ctx)
	if err != nil {
		return 0, 0, err
	}
	q, err := ch.QueueDeclarePassive(name, true, false, false, false, nil)
	if err != nil {
		t.ch = nil // a failed passive declare closes the channel
		var ae *amqp.Error
		if errors.As(err, &ae) && ae.Code == amqp.NotFound {
			return 0, 0, nil
		}
		return 0, 0, fmt.Errorf("amqpqueue: inspect queue %q: %w", name, err)
	}
	return q.Messages, q.Consumers, nil
}
