package sqlstore

import "sync"

// Subscribers are the queue.Notifier subscriptions of one store in this
// process. The zero value has none and is ready to use.
type Subscribers struct {
	mu   sync.Mutex
	subs map[*subscription]struct{}
}

// subscription is one Subscribe call: the queues it watches and its
// channel.
type subscription struct {
	queues map[string]bool
	ch     chan struct{}
}

// Add subscribes to queues: the channel gets a value, without blocking,
// when one of them may have a ready job, until the returned stop is
// called.
func (s *Subscribers) Add(queues []string) (<-chan struct{}, func()) {
	sub := &subscription{queues: make(map[string]bool, len(queues)), ch: make(chan struct{}, 1)}
	for _, q := range queues {
		sub.queues[q] = true
	}
	s.mu.Lock()
	if s.subs == nil {
		s.subs = map[*subscription]struct{}{}
	}
	s.subs[sub] = struct{}{}
	s.mu.Unlock()
	return sub.ch, func() {
		s.mu.Lock()
		delete(s.subs, sub)
		s.mu.Unlock()
	}
}

// Wake wakes, without blocking, the subscribers of any of queues.
func (s *Subscribers) Wake(queues ...string) {
	if len(queues) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for sub := range s.subs {
		for _, q := range queues {
			if sub.queues[q] {
				select {
				case sub.ch <- struct{}{}:
				default:
				}
				break
			}
		}
	}
}

// WakeAll wakes every subscriber, without blocking.
func (s *Subscribers) WakeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for sub := range s.subs {
		select {
		case sub.ch <- struct{}{}:
		default:
		}
	}
}
