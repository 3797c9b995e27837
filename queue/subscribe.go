package queue

import (
	"context"
	"sync"
)

// subscriber is one Subscription's side of the watcher: the live events
// offered to it wait in queue, bounded by the filter's Buffer.
type subscriber struct {
	f      EventFilter
	mu     sync.Mutex
	queue  []Event
	cut    bool          // the queue overflowed
	cutCh  chan struct{} // closed when cut
	signal chan struct{} // 1 slot: events or a cut are there
}

// offer queues the matching events of a batch, or cuts the subscriber
// off when they would overflow its buffer. Called with the watcher's mu.
func (s *subscriber) offer(events []Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cut {
		return
	}
	for _, e := range events {
		if !s.f.Match(e) {
			continue
		}
		if len(s.queue) >= s.f.Buffer {
			s.cut, s.queue = true, nil
			close(s.cutCh)
			break
		}
		s.queue = append(s.queue, e)
	}
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// take returns the queued events and whether the subscriber was cut off.
func (s *subscriber) take() ([]Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queue
	s.queue = nil
	return q, s.cut
}

// subscribe registers a subscriber at the watcher's cursor and runs it:
// first the events after f.After up to that cursor, read from the log,
// then the live ones the watcher offers.
func (w *watcher) subscribe(ctx context.Context, f EventFilter) (*Subscription, error) {
	if f.After != "" {
		// A cursor this log cannot read is the caller's mistake: say so
		// now, not as the end of a stream.
		if _, err := w.log.ReadEvents(ctx, f.After, 1, 0); err != nil {
			return nil, err
		}
	}
	s := &subscriber{f: f, signal: make(chan struct{}, 1), cutCh: make(chan struct{})}
	w.mu.Lock()
	if err := w.start(ctx); err != nil {
		w.mu.Unlock()
		return nil, err
	}
	w.subs[s] = struct{}{}
	upto := w.cursor
	w.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	sub := &Subscription{ch: make(chan Event), done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(sub.done)
		defer close(sub.ch)
		defer func() {
			w.mu.Lock()
			delete(w.subs, s)
			w.leave()
			w.mu.Unlock()
		}()
		sub.err = w.serve(ctx, s, sub, upto)
	}()
	return sub, nil
}

// serve replays, then streams live events, until ctx ends or a fault.
func (w *watcher) serve(ctx context.Context, s *subscriber, sub *Subscription, upto string) error {
	if s.f.After != "" && upto != "" && s.f.After != upto {
		if err := w.replay(ctx, s, sub, upto); err != nil {
			return err
		}
	}
	for {
		events, cut := s.take()
		if cut {
			return ErrSlowSubscriber
		}
		for _, e := range events {
			select {
			case sub.ch <- e:
			case <-s.cutCh:
				return ErrSlowSubscriber
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		select {
		case <-s.signal:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// replay sends the matching events after s.f.After up to and including
// upto, read from the log page by page.
func (w *watcher) replay(ctx context.Context, s *subscriber, sub *Subscription, upto string) error {
	cursor := s.f.After
	for {
		batch, err := w.log.ReadEvents(ctx, cursor, watchPage, 0)
		if err != nil {
			return err
		}
		if batch.Gap {
			sub.gap.Store(true)
		}
		if len(batch.Events) == 0 {
			return nil
		}
		for _, e := range batch.Events {
			if s.f.Match(e) {
				if err := send(ctx, sub.ch, e); err != nil {
					return err
				}
			}
			if e.ID == upto {
				return nil
			}
		}
		cursor = batch.Events[len(batch.Events)-1].ID
	}
}

func send(ctx context.Context, ch chan<- Event, e Event) error {
	select {
	case ch <- e:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
