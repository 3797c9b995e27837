package amqpqueue

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	amqp "github.com/rabbitmq/amqp091-go"
)

// outMsg is one message to publish to a broker queue through the default
// exchange.
type outMsg struct {
	to  qspec
	pub amqp.Publishing
}

// publishers is a pool of confirm-mode channels on the publishing
// connection. Publishes are pipelined: a batch is written at once and its
// confirms awaited together.
type publishers struct {
	b    *Backend
	next atomic.Uint32
	pool []*pubChan
}

func newPublishers(b *Backend, n int) *publishers {
	p := &publishers{b: b, pool: make([]*pubChan, n)}
	for i := range p.pool {
		p.pool[i] = &pubChan{b: b}
	}
	return p
}

// publish sends every message and returns once the broker has confirmed
// all of them. A message whose channel dies before its confirm is sent
// again on a fresh channel (after reconnecting if needed), so a message
// may be stored twice but is never reported stored when it is not. A
// broker nack or an unroutable return fails the call.
func (p *publishers) publish(ctx context.Context, msgs []outMsg) error {
	if err := p.b.topo.ensure(ctx, targets(msgs)...); err != nil {
		return err
	}
	var bo backoff
	bo.min, bo.max = p.b.opts.ReconnectMin, p.b.opts.ReconnectMax
	for len(msgs) > 0 {
		pc := p.pool[int(p.next.Add(1))%len(p.pool)]
		again, err := pc.send(ctx, msgs)
		if err != nil {
			return err
		}
		if len(again) > 0 && !bo.wait(ctx.Done()) {
			return fmt.Errorf("amqpqueue: publish: %w", context.Cause(ctx))
		}
		msgs = again
	}
	return nil
}

func targets(msgs []outMsg) []qspec {
	seen := make(map[string]bool, 2)
	var out []qspec
	for _, m := range msgs {
		if !seen[m.to.name] {
			seen[m.to.name] = true
			out = append(out, m.to)
		}
	}
	return out
}

// pubChan is one confirm-mode channel, reopened when it dies.
type pubChan struct {
	b *Backend

	mu      sync.Mutex
	ch      *amqp.Channel
	returns chan amqp.Return
	// returned holds the reply of every message the broker returned as
	// unroutable, by message id, until its publisher looks.
	returned map[string]string
}

// channel returns the live channel, opening one (in confirm mode, with a
// return listener) when there is none.
func (pc *pubChan) channel(ctx context.Context) (*amqp.Channel, error) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.ch != nil && !pc.ch.IsClosed() {
		return pc.ch, nil
	}
	ch, _, err := pc.b.pub.channel(ctx)
	if err != nil {
		return nil, err
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return nil, fmt.Errorf("amqpqueue: confirm mode: %w", err)
	}
	// Buffered so that the connection's reader never waits on it: the
	// broker sends basic.return before the basic.ack of the same message,
	// so by the time a publisher sees its confirm, the return (if any) is
	// in this buffer, where drain finds it.
	pc.returns = ch.NotifyReturn(make(chan amqp.Return, 1024))
	pc.returned = map[string]string{}
	pc.ch = ch
	return ch, nil
}

// send publishes msgs on this channel and waits for their confirms. It
// returns the messages whose outcome is unknown (their channel closed), to
// be sent again.
func (pc *pubChan) send(ctx context.Context, msgs []outMsg) (again []outMsg, err error) {
	ch, err := pc.channel(ctx)
	if err != nil {
		return nil, err
	}
	dcs := make([]*amqp.DeferredConfirmation, len(msgs))
	for i, m := range msgs {
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", m.to.name, true, false, m.pub)
		if err != nil {
			if ch.IsClosed() {
				return append(again, msgs[i:]...), nil
			}
			return nil, fmt.Errorf("amqpqueue: publish to %q: %w", m.to.name, err)
		}
		dcs[i] = dc
	}
	var nacked []string
	for i, dc := range dcs {
		if dc == nil {
			continue
		}
		ack, err := dc.WaitContext(ctx)
		if err != nil {
			return nil, fmt.Errorf("amqpqueue: waiting for the broker to confirm: %w", context.Cause(ctx))
		}
		switch {
		case ack:
		case ch.IsClosed():
			again = append(again, msgs[i])
		default:
			nacked = append(nacked, msgs[i].pub.MessageId)
		}
	}
	if len(nacked) > 0 {
		return nil, fmt.Errorf("amqpqueue: broker refused (nack) job %s and %d more", nacked[0], len(nacked)-1)
	}
	return again, pc.checkReturns(msgs)
}

// checkReturns fails if the broker returned any of msgs as unroutable (its
// queue does not exist: deleted behind the backend's back).
func (pc *pubChan) checkReturns(msgs []outMsg) error {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.drain()
	if len(pc.returned) == 0 {
		return nil
	}
	var err error
	for _, m := range msgs {
		if reply, ok := pc.returned[m.pub.MessageId]; ok {
			delete(pc.returned, m.pub.MessageId)
			pc.b.topo.forget(m.to.name)
			if err == nil {
				err = fmt.Errorf("amqpqueue: broker returned job %s unroutable to queue %q: %s", m.pub.MessageId, m.to.name, reply)
			}
		}
	}
	return err
}

// drain moves returns from the listener into returned. pc.mu held.
func (pc *pubChan) drain() {
	for {
		select {
		case r, ok := <-pc.returns:
			if !ok {
				return
			}
			if len(pc.returned) > 10_000 {
				clear(pc.returned) // publishers that gave up never looked
			}
			pc.returned[r.MessageId] = r.ReplyText
		default:
			return
		}
	}
}
