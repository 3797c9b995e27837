package redisqueue

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Subscribe implements queue.Notifier. The scripts publish on a queue's
// channel when its ready set goes from empty to not empty (an enqueue, a
// requeue, a rescue, an immediate retry, or due jobs a Lease promoted but
// did not take), so idle workers in every process wake within a round
// trip instead of a poll interval. While the ready set is not empty no
// message is sent: its workers are busy or about to lease anyway. The
// process that made the change wakes its own subscribers at once.
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

	mu     sync.Mutex
	subs   map[string]map[*subscriber]struct{} // by channel
	ps     *redis.PubSub
	wg     sync.WaitGroup
	closed bool
}

type subscriber struct {
	ch    chan struct{}
	chans []string
}

func newNotifier(c redis.UniversalClient, log *slog.Logger) *notifier {
	return &notifier{client: c, log: log, subs: map[string]map[*subscriber]struct{}{}}
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
		n.ps = n.client.Subscribe(ctx, chans...)
		msgs := n.ps.Channel(redis.WithChannelSize(64))
		n.wg.Add(1)
		go n.read(msgs)
		return
	}
	if err := n.ps.Subscribe(ctx, chans...); err != nil {
		n.log.Warn("redisqueue: subscribing to job notifications failed; workers fall back to polling", "err", err)
	}
}

// read wakes the subscribers of each message's channel until the pub/sub
// connection closes.
func (n *notifier) read(msgs <-chan *redis.Message) {
	defer n.wg.Done()
	for m := range msgs {
		n.wake(m.Channel)
	}
}

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
