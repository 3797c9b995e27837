package sqlitequeue

// subscriber is one Subscribe call: the queues it watches and its channel.
type subscriber struct {
	queues map[string]bool
	ch     chan struct{}
}

// Subscribe implements queue.Notifier. Notifications come from this
// process only; workers in other processes sharing the file find new jobs
// by polling.
func (b *Backend) Subscribe(queues []string) (<-chan struct{}, func()) {
	s := &subscriber{queues: map[string]bool{}, ch: make(chan struct{}, 1)}
	for _, q := range queues {
		s.queues[q] = true
	}
	b.subMu.Lock()
	b.subs[s] = struct{}{}
	b.subMu.Unlock()
	return s.ch, func() {
		b.subMu.Lock()
		delete(b.subs, s)
		b.subMu.Unlock()
	}
}

// notify wakes the subscribers of queue q without blocking.
func (b *Backend) notify(q string) {
	b.subMu.Lock()
	defer b.subMu.Unlock()
	for s := range b.subs {
		if s.queues[q] {
			select {
			case s.ch <- struct{}{}:
			default:
			}
		}
	}
}
