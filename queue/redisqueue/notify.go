package redisqueue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Subscribe implements queue.Notifier. The scripts publish on a queue's
// channel when its ready set goes from empty to not empty (an enqueue, a
// requeue, a rescue, an immediate retry, or due jobs a Lease promoted but
// did not take), so idle workers in every process wake within a round
// trip instead of a poll interval. While the ready set is not empty no
// message is sent: its workers are busy or about to lease anyway. The
// process that made the change wakes its own subscribers at once; the
// message of an enqueue is the enqueuing Backend's random origin, so that
// Backend knows the message for its own and does not wake them twice, and
// an enqueue of the lean path (lean.go) that finds the enqueuing Backend
// the channel's one listener sends none.
//
// One pub/sub connection per Backend serves all subscriptions; it is
// opened by the first Subscribe and closed with the Backend.
func (b *Backend) Subscribe(queues []string) (<-chan struct{}, func()) {
	chans := make([]string, 0, len(queues))
	for _, q := range queues {
		if q != "" {
			chans = append(chans, b.keys.queue(q).channel)
		}
	}
	return b.notes.subscribe(chans)
}

// notifier fans pub/sub messages out to local subscribers.
type notifier struct {
	client redis.UniversalClient
	log    *slog.Logger
	// timers is the channel of new timed work (lib.lua's timed), listened
	// to with the first subscription; "" on Cluster.
	timers string
	// origin is this notifier's random name, the message of its own
	// enqueues.
	origin string
	// gen counts what may have made work ready or due sooner: every
	// message, every (re)subscription and every local change that says so
	// (bump). A lease that found nothing holds until it moves (idle.go).
	gen atomic.Uint64
	// tgen counts what may have added timed work: messages on the timers
	// channel, 't' on a queue's, every (re)subscription and every bump.
	// A lease that read the timed sets' heads skips reading them again
	// until it moves (heads.go).
	tgen atomic.Uint64

	mu        sync.Mutex
	subs      map[string]map[*subscriber]struct{} // by channel
	confirmed map[string]bool                     // channels Redis confirmed subscribing to
	ps        *redis.PubSub
	wg        sync.WaitGroup
	closed    bool
}

type subscriber struct {
	ch    chan struct{}
	chans []string
}

func newNotifier(c redis.UniversalClient, log *slog.Logger, timers string) *notifier {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &notifier{client: c, log: log, timers: timers, origin: "o" + hex.EncodeToString(b[:]),
		subs: map[string]map[*subscriber]struct{}{}, confirmed: map[string]bool{}}
}

func (n *notifier) subscribe(chans []string) (<-chan struct{}, func()) {
	s := &subscriber{ch: make(chan struct{}, 1), chans: chans}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return s.ch, func() {}
	}
	var fresh []string
	for _, c := range chans {
		if n.subs[c] == nil {
			n.subs[c] = map[*subscriber]struct{}{}
			fresh = append(fresh, c)
		}
		n.subs[c][s] = struct{}{}
	}
	n.listen(fresh)
	var once sync.Once
	return s.ch, func() { once.Do(func() { n.unsubscribe(s) }) }
}

// listen subscribes the pub/sub connection to more channels, opening it
// (and its reader) on first use. Called with mu held.
func (n *notifier) listen(chans []string) {
	if len(chans) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if n.ps == nil {
		if n.timers != "" {
			chans = append(chans[:len(chans):len(chans)], n.timers)
		}
		n.ps = n.client.Subscribe(ctx, chans...)
		msgs := n.ps.ChannelWithSubscriptions(redis.WithChannelSize(64))
		n.wg.Add(1)
		go n.read(msgs)
		return
	}
	if err := n.ps.Subscribe(ctx, chans...); err != nil {
		n.log.Warn("redisqueue: subscribing to job notifications failed; workers fall back to polling", "err", err)
	}
}

// read wakes the subscribers of each message's channel until the pub/sub
// connection closes. A message on the timers channel, or 't' on a queue's,
// only moves gen: the work it announces is not ready yet. A subscription
// Redis confirms again (go-redis reconnected) wakes the channel's
// subscribers too, since messages sent while it was away are lost.
func (n *notifier) read(msgs <-chan any) {
	defer n.wg.Done()
	for v := range msgs {
		switch m := v.(type) {
		case *redis.Message:
			if n.own(m.Payload) {
				continue
			}
			n.gen.Add(1)
			if m.Payload != "t" && m.Channel != n.timers {
				n.wake(m.Channel)
			} else {
				n.tgen.Add(1)
			}
		case *redis.Subscription:
			n.mu.Lock()
			again := n.confirmed[m.Channel] && m.Kind == "subscribe"
			n.confirmed[m.Channel] = m.Kind == "subscribe"
			n.mu.Unlock()
			n.gen.Add(1)
			n.tgen.Add(1)
			if again {
				n.wake(m.Channel)
			}
		}
	}
}

// bump says this process changed something that may make work ready or
// due sooner without a message of its own arriving first.
func (n *notifier) bump() {
	n.tgen.Add(1)
	n.gen.Add(1)
}

// heard reports whether every channel of chans, and the timers channel,
// is confirmed subscribed: then a change to them reaches this process as
// a message.
func (n *notifier) heard(chans []string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || n.timers == "" || !n.confirmed[n.timers] {
		return false
	}
	for _, c := range chans {
		if !n.confirmed[c] {
			return false
		}
	}
	return true
}

// listening reports whether this process hears channel c itself: it has
// subscribers there and Redis confirmed the subscription. An enqueue that
// finds this process the channel's one listener skips the message
// (lean_enqueue.lua); if the connection dropped unnoticed, the job is
// still this process's workers' to take, woken locally.
func (n *notifier) listening(c string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.closed && n.confirmed[c] && len(n.subs[c]) > 0
}

// wakeLocal wakes the subscribers of channel c for a change this process
// made, moving gen first so their next lease looks.
func (n *notifier) wakeLocal(c string) {
	n.gen.Add(1)
	n.wake(c)
}

// own reports whether a message is this process's own: an enqueue's,
// whose workers it wakes itself (the script publishes the caller's
// origin).
func (n *notifier) own(payload string) bool { return payload == n.origin }

// wake signals every subscriber of channel c without blocking: a
// subscriber that already has a signal pending keeps just that one.
func (n *notifier) wake(c string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for s := range n.subs[c] {
		select {
		case s.ch <- struct{}{}:
		default:
		}
	}
}

func (n *notifier) unsubscribe(s *subscriber) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var gone []string
	for _, c := range s.chans {
		delete(n.subs[c], s)
		if len(n.subs[c]) == 0 && n.subs[c] != nil {
			delete(n.subs, c)
			gone = append(gone, c)
		}
	}
	for _, c := range gone {
		delete(n.confirmed, c)
	}
	if n.ps != nil && len(gone) > 0 && !n.closed {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.ps.Unsubscribe(ctx, gone...) // best effort: stray messages only wake nobody
	}
}

// close ends the pub/sub connection and waits for its reader.
func (n *notifier) close() {
	n.mu.Lock()
	n.closed = true
	ps := n.ps
	n.mu.Unlock()
	if ps != nil {
		_ = ps.Close()
	}
	n.wg.Wait()
}
