package amqpqueue

import (
	"context"
	"strconv"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// consumer receives one lane queue's deliveries on Options.Consumers
// channels of the consuming connection, which share Options.Prefetch, and
// buffers them for Lease. (Each broker channel is one process in the
// broker; more than one lets a busy queue use more than one broker core.)
// When a channel dies (connection loss, broker restart, channel error) its
// loop opens another: a new instance. The broker takes back every
// unacknowledged delivery of a dead channel, so tokens of a dead instance
// are lost leases.
type consumer struct {
	b     *Backend
	queue string
	buf   chan *delivery
}

type delivery struct {
	d    amqp.Delivery
	inst *instance
}

// consumerFor returns the consumer of lane queue q, starting it on first use.
func (b *Backend) consumerFor(q string) *consumer {
	b.cmu.Lock()
	defer b.cmu.Unlock()
	if c, ok := b.consumers[q]; ok {
		return c
	}
	if b.stopped {
		return &consumer{b: b, queue: q, buf: make(chan *delivery)}
	}
	// Twice the prefetch: a dead instance's deliveries may still sit in
	// the buffer while the next instance's arrive.
	c := &consumer{b: b, queue: q, buf: make(chan *delivery, 2*max(b.opts.Prefetch, 1))}
	b.consumers[q] = c
	n := b.opts.Consumers
	for i := 0; i < n; i++ {
		prefetch := b.opts.Prefetch / n
		if i < b.opts.Prefetch%n {
			prefetch++
		}
		b.cwg.Add(1)
		go func() {
			defer b.cwg.Done()
			c.run(prefetch)
		}()
	}
	return c
}

// run keeps a consuming channel with the given prefetch open until the
// backend closes. On the way out it sends the acks already settled, before
// the connection closes.
func (c *consumer) run(prefetch int) {
	ctx := c.b.stopCtx
	bo := backoff{min: c.b.opts.ReconnectMin, max: c.b.opts.ReconnectMax}
	for bo.wait(ctx.Done()) {
		in, deliveries, err := c.open(ctx, prefetch)
		if err != nil {
			if ctx.Err() == nil {
				c.b.log.Warn("amqpqueue: cannot consume; retrying", "queue", c.queue, "err", err)
			}
			continue
		}
		bo.reset()
		var acks sync.WaitGroup
		acks.Add(1)
		go func() { defer acks.Done(); in.ackLoop() }()
		c.forward(ctx, in, deliveries)
		if ctx.Err() != nil {
			in.flush(true)
		}
		in.kill()
		acks.Wait()
		c.b.dropHeld(in)
	}
}

// open declares the queue and starts consuming it on a new channel.
func (c *consumer) open(ctx context.Context, prefetch int) (*instance, <-chan amqp.Delivery, error) {
	if err := c.b.topo.ensure(ctx, c.b.mainSpec(c.queue)); err != nil {
		return nil, nil, err
	}
	ch, _, err := c.b.sub.channel(ctx)
	if err != nil {
		return nil, nil, err
	}
	in := newInstance(c.b.instances.Add(1), ch)
	if err := ch.Qos(prefetch, 0, false); err != nil {
		_ = ch.Close()
		return nil, nil, err
	}
	tag := c.b.opts.ConnectionName + "-" + c.b.idPrefix + "-" + c.queue + "-" + strconv.FormatUint(in.id, 10)
	deliveries, err := ch.Consume(c.b.mainName(c.queue), tag, false, false, false, false, nil)
	if err != nil {
		_ = ch.Close()
		return nil, nil, err
	}
	return in, deliveries, nil
}

// forward moves deliveries into the buffer until the channel closes (the
// library then closes deliveries) or the backend closes. An idle worker is
// woken when the buffer goes from empty to not empty.
func (c *consumer) forward(ctx context.Context, in *instance, deliveries <-chan amqp.Delivery) {
	for {
		select {
		case d, ok := <-deliveries:
			if !ok {
				return
			}
			in.delivered(d.DeliveryTag)
			select {
			case c.buf <- &delivery{d: d, inst: in}:
				if len(c.buf) == 1 {
					c.b.notify(c.queue)
				}
			case <-ctx.Done():
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// next takes one buffered delivery, or nil.
func (c *consumer) next() *delivery {
	select {
	case d := <-c.buf:
		return d
	default:
		return nil
	}
}

// subscribers wake idle workers (queue.Notifier).
type subscribers struct {
	mu   sync.Mutex
	subs map[*subscriber]struct{}
}

type subscriber struct {
	queues map[string]bool
	ch     chan struct{}
}

// Subscribe implements queue.Notifier: the channel receives a value soon
// after a delivery for one of queues reaches this process's buffer.
func (b *Backend) Subscribe(queues []string) (<-chan struct{}, func()) {
	s := &subscriber{queues: make(map[string]bool, len(queues)), ch: make(chan struct{}, 1)}
	for _, q := range queues {
		s.queues[q] = true
		b.consumerFor(q) // deliveries start flowing before the first Lease
	}
	b.subs.mu.Lock()
	b.subs.subs[s] = struct{}{}
	b.subs.mu.Unlock()
	stopSched := b.subscribeScheduler(queues, s.ch)
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			stopSched()
			b.subs.mu.Lock()
			delete(b.subs.subs, s)
			b.subs.mu.Unlock()
		})
	}
}

// subscribeScheduler forwards the Scheduler's wake-ups for queues to ch
// until the returned function is called.
func (b *Backend) subscribeScheduler(queues []string, ch chan struct{}) func() {
	if b.sched == nil || b.sched.Features().Notify == nil {
		return func() {}
	}
	in, stop := b.sched.Features().Notify.Subscribe(queues)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-in:
				select {
				case ch <- struct{}{}:
				default:
				}
			case <-done:
				return
			}
		}
	}()
	return func() { close(done); stop() }
}

func (b *Backend) notify(q string) {
	b.subs.mu.Lock()
	defer b.subs.mu.Unlock()
	for s := range b.subs.subs {
		if s.queues[q] {
			select {
			case s.ch <- struct{}{}:
			default:
			}
		}
	}
}
