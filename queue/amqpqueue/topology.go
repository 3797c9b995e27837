package amqpqueue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Broker queue names. A lane queue q has a main queue, a dead-letter queue
// and, declared on first use, one delay queue per delay bucket.
func (b *Backend) mainName(q string) string { return b.opts.Prefix + q }
func (b *Backend) deadName(q string) string { return b.opts.Prefix + q + ".dead" }
func (b *Backend) delayName(q string, d time.Duration) string {
	return b.opts.Prefix + q + ".delay." + strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// maxBrokerName is RabbitMQ's limit on queue names, in bytes.
const maxBrokerName = 255

// checkQueueName makes sure every broker name derived from q fits.
func checkQueueName(prefix, q string) error {
	longest := len(prefix) + len(q) + len(".delay.") + 20 + len("ms")
	if q == "" {
		return invalid("queue name", "must not be empty")
	}
	if longest > maxBrokerName {
		return invalid("queue name", "%q is too long: with the prefix and suffixes it must fit in %d bytes", q, maxBrokerName)
	}
	return nil
}

// kind of broker queue, for its arguments.
type qkind int

const (
	kindMain qkind = iota
	kindDead
	kindDelay
)

// qspec is a broker queue to declare.
type qspec struct {
	name  string
	kind  qkind
	queue string        // the lane queue it belongs to
	delay time.Duration // kindDelay only
}

func (b *Backend) mainSpec(q string) qspec { return qspec{b.mainName(q), kindMain, q, 0} }
func (b *Backend) deadSpec(q string) qspec { return qspec{b.deadName(q), kindDead, q, 0} }
func (b *Backend) delaySpec(q string, d time.Duration) qspec {
	return qspec{b.delayName(q, d), kindDelay, q, d}
}

// args returns the broker arguments of a queue. Quorum queues (the default)
// dead-letter at least once, which needs reject-publish overflow (no
// length limit is set, so it never triggers); classic queues are used in
// priority mode, where quorum queues (before RabbitMQ 4) have no
// priorities.
func (b *Backend) args(s qspec) amqp.Table {
	// The type is always explicit, so that declaring over a queue of the
	// other type fails instead of silently using it.
	t := amqp.Table{"x-queue-type": "classic"}
	quorum := b.opts.Priorities == 0
	if quorum {
		t["x-queue-type"] = "quorum"
	}
	switch s.kind {
	case kindMain:
		t["x-dead-letter-exchange"] = ""
		t["x-dead-letter-routing-key"] = b.deadName(s.queue)
		// The backend dead-letters a job itself (with its reason) once
		// it has come back more than MaxRedeliveries times, so no
		// x-delivery-limit is set (it would tie the queue to one value
		// of the option); an operator may add one by policy, and the
		// broker then dead-letters to the same queue.
		if quorum {
			t["x-dead-letter-strategy"] = "at-least-once"
			t["x-overflow"] = "reject-publish"
		} else {
			t["x-max-priority"] = int64(b.opts.Priorities)
		}
	case kindDead:
		t["x-message-ttl"] = b.opts.DeadLetterTTL.Milliseconds()
		if b.opts.DeadLetterMax > 0 {
			t["x-max-length"] = int64(b.opts.DeadLetterMax)
		}
	case kindDelay:
		t["x-message-ttl"] = s.delay.Milliseconds()
		t["x-dead-letter-exchange"] = ""
		t["x-dead-letter-routing-key"] = b.mainName(s.queue)
		if quorum {
			t["x-dead-letter-strategy"] = "at-least-once"
			t["x-overflow"] = "reject-publish"
		}
	}
	return t
}

// topology declares broker queues on a dedicated channel of the publishing
// connection, once per connection: queues are durable, but a broker that
// lost its data (or an operator) may have dropped them meanwhile.
type topology struct {
	b   *Backend
	mu  sync.Mutex
	ch  *amqp.Channel
	gen uint64 // connection generation of ch
	// declared maps a broker queue to the connection generation it was
	// last declared on.
	declared map[string]uint64
	// names lists every broker queue ever declared, by lane queue.
	names map[string]map[string]qspec
}

func newTopology(b *Backend) *topology {
	return &topology{b: b, declared: map[string]uint64{}, names: map[string]map[string]qspec{}}
}

// ensure declares the queues that are not yet declared on the current
// connection. The main queue of a lane queue is always declared after its
// dead-letter queue, and a delay queue after the main queue it feeds.
func (t *topology) ensure(ctx context.Context, specs ...qspec) error {
	for _, s := range specs {
		if err := t.ensureOne(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

func (t *topology) ensureOne(ctx context.Context, s qspec) error {
	_, gen, err := t.b.pub.current(ctx)
	if err != nil {
		return err
	}
	t.mu.Lock()
	done := t.declared[s.name] == gen
	t.mu.Unlock()
	if done {
		return nil
	}
	switch s.kind {
	case kindMain:
		if err := t.ensureOne(ctx, t.b.deadSpec(s.queue)); err != nil {
			return err
		}
	case kindDelay:
		if err := t.ensureOne(ctx, t.b.mainSpec(s.queue)); err != nil {
			return err
		}
	}
	return t.declare(ctx, s)
}

func (t *topology) declare(ctx context.Context, s qspec) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	ch, gen, err := t.channel(ctx)
	if err != nil {
		return err
	}
	if _, err := ch.QueueDeclare(s.name, true, false, false, false, t.b.args(s)); err != nil {
		t.ch = nil
		if err := t.tolerate(ctx, s, err); err != nil {
			return err
		}
	}
	t.declared[s.name] = gen
	byQueue := t.names[s.queue]
	if byQueue == nil {
		byQueue = map[string]qspec{}
		t.names[s.queue] = byQueue
	}
	byQueue[s.name] = s
	return nil
}

// tolerate decides about a queue that exists with other arguments (the
// broker refuses the declaration with PRECONDITION_FAILED). A dead-letter
// queue is used as it is, with a warning, so that changing DeadLetterTTL
// or DeadLetterMax does not stop a deployment (whose dead letters are in
// the old queue). Any other queue is an error: it would not behave as
// configured (another type, other priorities). t.mu held.
func (t *topology) tolerate(ctx context.Context, s qspec, declErr error) error {
	fail := fmt.Errorf("amqpqueue: declare queue %q (it exists with other arguments: delete it or keep the options it was made with): %w", s.name, declErr)
	var ae *amqp.Error
	if s.kind != kindDead || !errors.As(declErr, &ae) || ae.Code != amqp.PreconditionFailed {
		return fail
	}
	ch, _, err := t.channel(ctx)
	if err != nil {
		return err
	}
	if _, err := ch.QueueDeclarePassive(s.name, true, false, false, false, nil); err != nil {
		t.ch = nil
		return fail
	}
	t.b.log.Warn("amqpqueue: dead-letter queue exists with other arguments; using it as it is", "queue", s.name, "broker", ae.Reason)
	return nil
}

// forget makes the next ensure declare name again (after the broker said
// it does not exist).
func (t *topology) forget(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.declared, name)
}

// channel returns the declaring channel, opening it if needed. t.mu held.
func (t *topology) channel(ctx context.Context) (*amqp.Channel, uint64, error) {
	_, gen, err := t.b.pub.current(ctx)
	if err != nil {
		return nil, 0, err
	}
	if t.ch != nil && !t.ch.IsClosed() && t.gen == gen {
		return t.ch, gen, nil
	}
	ch, gen, err := t.b.pub.channel(ctx)
	if err != nil {
		return nil, 0, err
	}
	t.ch = ch
	t.gen = gen
	return ch, gen, nil
}

// inspect returns the number of ready messages in a declared broker queue.
func (t *topology) inspect(ctx context.Context, name string) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ch, _, err := t.channel(ctx)
	if err != nil {
		return 0, err
	}
	q, err := ch.QueueDeclarePassive(name, true, false, false, false, nil)
	if err != nil {
		t.ch = nil
		var ae *amqp.Error
		if errors.As(err, &ae) && ae.Code == amqp.NotFound {
			delete(t.declared, name)
			return 0, nil
		}
		return 0, fmt.Errorf("amqpqueue: inspect queue %q: %w", name, err)
	}
	return q.Messages, nil
}

// queues returns the lane queues known to the backend and, for each, its
// broker queues.
func (t *topology) queues() map[string][]qspec {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string][]qspec, len(t.names))
	for q, byName := range t.names {
		for _, s := range byName {
			out[q] = append(out[q], s)
		}
	}
	return out
}
