package amqpqueue

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/sluicehq/sluice/queue"
)

// instance is one consuming channel's life; its deliveries' tags only mean
// something on it.
//
// It also coalesces acknowledgements. Every ack costs the broker a step
// (for a quorum queue, a command through its Raft log), so acks go to a
// goroutine that sends, each time it wakes, everything settled since: the
// acks below the lowest delivery still unsettled as one multiple ack. Acks
// above it (jobs finish out of order) wait up to ackLinger for the jobs
// before them, then go one by one. Nothing waits for a batch to fill:
// under load, completions pile up while the previous batch is being
// written, and batches grow by themselves. Nacks (rare) are sent at once.
type instance struct {
	id   uint64
	ch   settler
	dead atomic.Bool
	gone chan struct{} // closed when dead

	// send serialises writing acks and nacks with deciding what a
	// multiple ack may cover, so that a multiple ack never covers a tag
	// whose nack is on its way.
	send sync.Mutex

	mu        sync.Mutex
	unsettled map[uint64]struct{} // delivered, neither acked nor nacked
	acks      []uint64            // acked, not yet sent
	spare     []uint64
	kick      chan struct{}

	// waiting holds acks above the lowest unsettled tag, kept back for up
	// to ackLinger in the hope that a multiple ack covers them. Guarded by
	// send (only flush touches them).
	waiting      []uint64
	waitingSince time.Time
}

// ackLinger is how long an ack that no multiple ack can cover yet is kept
// back before it is sent on its own. Jobs finish out of order, so most of
// those behind the oldest running one are covered once it finishes; a
// long job costs the acks behind it this delay, no more.
const ackLinger = 2 * time.Millisecond

// settler is the part of *amqp.Channel that settles deliveries.
type settler interface {
	Ack(tag uint64, multiple bool) error
	Nack(tag uint64, multiple, requeue bool) error
}

var _ settler = (*amqp.Channel)(nil)

func newInstance(id uint64, ch settler) *instance {
	return &instance{
		id: id, ch: ch, gone: make(chan struct{}),
		unsettled: map[uint64]struct{}{}, kick: make(chan struct{}, 1),
	}
}

func (in *instance) kill() {
	if !in.dead.Swap(true) {
		close(in.gone)
	}
}

// delivered registers a delivery's tag; called in delivery order.
func (in *instance) delivered(tag uint64) {
	in.mu.Lock()
	in.unsettled[tag] = struct{}{}
	in.mu.Unlock()
}

// ack settles tag positively. It returns queue.ErrLeaseLost when the
// channel is dead (the broker takes the delivery back). The ack itself is
// sent shortly after, by the ack loop.
func (in *instance) ack(tag uint64) error {
	if in.dead.Load() {
		return queue.ErrLeaseLost
	}
	in.mu.Lock()
	delete(in.unsettled, tag)
	in.acks = append(in.acks, tag)
	in.mu.Unlock()
	select {
	case in.kick <- struct{}{}:
	default:
	}
	return nil
}

// nack hands tag back to the broker (requeued) at once.
func (in *instance) nack(tag uint64) error {
	if in.dead.Load() {
		return queue.ErrLeaseLost
	}
	in.send.Lock()
	defer in.send.Unlock()
	in.mu.Lock()
	delete(in.unsettled, tag)
	in.mu.Unlock()
	if err := in.ch.Nack(tag, false, true); err != nil {
		return queue.ErrLeaseLost
	}
	return nil
}

// ackLoop sends acks until the instance dies.
func (in *instance) ackLoop() {
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		select {
		case <-in.gone:
			t.Stop()
			return
		case <-in.kick:
		case <-t.C:
		}
		if in.flush(false) {
			t.Reset(ackLinger)
		}
	}
}

// flush sends the acks settled so far: those below the lowest unsettled
// delivery as one multiple ack, the others one by one once they have
// waited ackLinger (at once when all is true). It reports whether acks are
// still waiting.
func (in *instance) flush(all bool) (waiting bool) {
	in.send.Lock()
	defer in.send.Unlock()
	in.mu.Lock()
	acks := append(in.acks, in.waiting...)
	in.acks, in.spare, in.waiting = in.spare[:0], nil, nil
	low := ^uint64(0)
	if len(acks) > 0 {
		for t := range in.unsettled {
			low = min(low, t)
		}
	}
	in.mu.Unlock()
	if len(acks) == 0 {
		return false
	}
	slices.Sort(acks)
	// Every tag below low is settled: those not in acks were nacked
	// already, so one multiple ack covers exactly acks[:below].
	below, _ := slices.BinarySearch(acks, low)
	if below > 0 {
		_ = in.ch.Ack(acks[below-1], below > 1)
	}
	rest := acks[below:]
	now := time.Now()
	switch {
	case len(rest) == 0:
		in.waitingSince = time.Time{}
	case all || (!in.waitingSince.IsZero() && now.Sub(in.waitingSince) >= ackLinger):
		for _, t := range rest {
			_ = in.ch.Ack(t, false)
		}
		in.waitingSince = time.Time{}
	default:
		if in.waitingSince.IsZero() {
			in.waitingSince = now
		}
		in.waiting = slices.Clone(rest)
		waiting = true
	}
	in.mu.Lock()
	in.spare = acks[:0]
	in.mu.Unlock()
	return waiting
}
