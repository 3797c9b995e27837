package pgqueue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Reconnect backoff of the listener.
const (
	listenRetryMin = 50 * time.Millisecond
	listenRetryMax = 5 * time.Second
)

// Subscribe implements queue.Notifier. The first call starts the store's
// listener: one connection of its own, outside the pool, that LISTENs on
// the schema's channel. Every transition that makes a job ready NOTIFYs
// that channel with the queue's name in its own transaction, so a worker
// in any process wakes within a round trip of the commit, and never for a
// transaction that rolled back. Notifications are an optimisation: when
// the listener's connection drops, every subscriber is woken once it is
// back (what was sent meanwhile is lost), and workers keep their poll.
func (s *Store) Subscribe(queues []string) (<-chan struct{}, func()) {
	ch, stop := s.subs.Add(queues)
	s.listenOn.Do(func() {
		// Under subMu, which Close takes before it waits: the Add either
		// happens before Close's Wait or not at all.
		s.subMu.Lock()
		defer s.subMu.Unlock()
		if s.closed.Load() {
			return
		}
		s.listenWG.Add(1)
		go s.listen()
	})
	return ch, stop
}

// wakeLocal wakes this process's subscribers of queues without blocking.
func (s *Store) wakeLocal(queues []string) { s.subs.Wake(queues...) }

// wake tells the workers of every process that q may have a ready job,
// after a transition that committed on its own: those of this process at
// once, the others through the store's notifier (see notifier).
func (s *Store) wake(q string) { s.wakeAfter([]string{q}) }

// wakeAfter is wake for every queue of qs.
func (s *Store) wakeAfter(qs []string) {
	if len(qs) == 0 {
		return
	}
	s.wakeLocal(qs)
	s.notes.add(qs)
}

// originSep ends the queue's name in the payload of the notifier's
// NOTIFYs, before the sending store's origin; queue names hold no control
// characters, so it cannot occur in one.
const originSep = "\x1f"

// newOrigin is a random name for a Store, told apart from every other
// store's in the payload of its notifier's NOTIFYs: its own listener
// drops them, since the store woke its subscribers when it committed.
func newOrigin() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// notifyTimeout bounds one NOTIFY the notifier sends.
const notifyTimeout = 5 * time.Second

// notifier sends the NOTIFYs of the transitions the store commits on its
// own (not in a caller's transaction), after their commit, coalesced: one
// statement at a time, which carries every queue asked for while the one
// before it ran.
//
// Postgres takes one database-wide lock from the moment a transaction
// that NOTIFYs prepares to commit until its commit is flushed, so
// transactions that NOTIFY commit one at a time, each with its own WAL
// flush: a NOTIFY in every enqueue turns concurrent enqueues into a
// queue of flushes. Sent apart, the inserts commit together (group
// commit) and at most one notifying transaction is in flight. A queue is
// still notified after every commit that asked for it, since a request
// that comes while a NOTIFY is in flight is sent by the next one; a lost
// NOTIFY costs only latency (workers poll), so its error is dropped.
type notifier struct {
	s       *Store
	mu      sync.Mutex
	pending []string // queues to notify, once each
	running bool
	wg      sync.WaitGroup // the sending goroutine
}

// add asks for a NOTIFY of each of qs and starts the sender unless it runs.
func (n *notifier) add(qs []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.s.closed.Load() {
		return
	}
	for _, q := range qs {
		if !slices.Contains(n.pending, q) {
			n.pending = append(n.pending, q)
		}
	}
	if !n.running && len(n.pending) > 0 {
		n.running = true
		n.wg.Add(1)
		go n.loop()
	}
}

// loop sends NOTIFYs until none is pending or the store closes.
func (n *notifier) loop() {
	defer n.wg.Done()
	for {
		qs := n.take()
		if qs == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
		_, _ = n.s.pool.Exec(ctx, n.s.q.notifyMany, n.s.q.channel, qs, n.s.origin)
		cancel()
	}
}

// close waits for the sender to stop; the store is already marked
// closed. Taking the lock orders it after any add that did not see that
// mark, so no sender starts after the wait.
func (n *notifier) close() {
	n.mu.Lock()
	//lint:ignore SA2001 an empty critical section, for the order above
	n.mu.Unlock()
	n.wg.Wait()
}

// take returns the pending queues, or nil, marking the sender stopped,
// when there are none or the store is closing (subscribers elsewhere
// then fall back on their poll).
func (n *notifier) take() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	qs := n.pending
	n.pending = nil
	if len(qs) == 0 || n.s.closed.Load() {
		n.running = false
		return nil
	}
	return qs
}

// listen runs the listener until Close, reconnecting with backoff.
func (s *Store) listen() {
	defer s.listenWG.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	delay := listenRetryMin
	for {
		connected := s.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if connected {
			delay = listenRetryMin
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(2*delay, listenRetryMax)
	}
}

// listenOnce connects, LISTENs and relays notifications until the
// connection fails or ctx ends. It reports whether it got as far as
// listening.
func (s *Store) listenOnce(ctx context.Context) bool {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return false
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.q.channel}.Sanitize()); err != nil {
		return false
	}
	// Whatever was notified while not listening is lost: look again.
	s.subs.WakeAll()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true
		}
		q, origin, mine := strings.Cut(n.Payload, originSep)
		if mine && origin == s.origin {
			continue // its subscribers were woken at the commit
		}
		s.wakeLocal([]string{q})
	}
}
