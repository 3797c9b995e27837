package amqpqueue

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/sluicehq/sluice/queue"
)

// link is one AMQP connection that heals itself: a supervisor goroutine
// watches it (NotifyClose) and, when the broker or the network drops it,
// dials again with backoff until the backend closes. Users ask for the
// current connection and open their own channels on it; a channel that
// fails is theirs to reopen.
type link struct {
	name    string // "publish" or "consume", for logs
	url     string
	cfg     amqp.Config
	log     *slog.Logger
	backoff backoff
	closing <-chan struct{}

	mu      sync.Mutex
	cur     *amqp.Connection // nil while disconnected
	gen     uint64           // counts connections made
	changed chan struct{}    // closed and replaced whenever cur changes
}

func newLink(name, url string, opts Options, closing <-chan struct{}) *link {
	return &link{
		name: name, url: url, log: opts.Logger, closing: closing,
		backoff: backoff{min: opts.ReconnectMin, max: opts.ReconnectMax},
		cfg: amqp.Config{
			Heartbeat:  10 * time.Second,
			Properties: amqp.Table{"connection_name": opts.ConnectionName + " " + name},
		},
		changed: make(chan struct{}),
	}
}

// dial makes the first connection, so that New fails at once on a bad URL
// or credentials rather than retrying forever.
func (l *link) dial() error {
	conn, err := amqp.DialConfig(l.url, l.cfg)
	if err != nil {
		return fmt.Errorf("amqpqueue: connect (%s): %w", l.name, err)
	}
	l.set(conn)
	return nil
}

func (l *link) set(conn *amqp.Connection) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cur = conn
	if conn != nil {
		l.gen++
	}
	close(l.changed)
	l.changed = make(chan struct{})
}

// run supervises the connection until the backend closes, then closes it.
func (l *link) run() {
	for {
		l.mu.Lock()
		conn := l.cur
		l.mu.Unlock()
		if conn == nil {
			if conn = l.reconnect(); conn == nil {
				return
			}
		}
		lost := conn.NotifyClose(make(chan *amqp.Error, 1))
		select {
		case <-l.closing:
			l.set(nil)
			_ = conn.CloseDeadline(time.Now().Add(5 * time.Second))
			return
		case err := <-lost:
			l.log.Warn("amqpqueue: connection lost; reconnecting", "link", l.name, "err", err)
			l.set(nil)
		}
	}
}

// reconnect dials with backoff until it succeeds (returning the new
// connection) or the backend closes (nil).
func (l *link) reconnect() *amqp.Connection {
	l.backoff.reset()
	for {
		if !l.backoff.wait(l.closing) {
			return nil
		}
		conn, err := amqp.DialConfig(l.url, l.cfg)
		if err == nil {
			l.log.Info("amqpqueue: reconnected", "link", l.name)
			l.set(conn)
			return conn
		}
		l.log.Warn("amqpqueue: reconnect failed", "link", l.name, "err", err)
	}
}

// current returns the live connection and its generation, waiting for
// one while the link is down, until ctx ends or the backend closes.
func (l *link) current(ctx context.Context) (*amqp.Connection, uint64, error) {
	for {
		l.mu.Lock()
		conn, gen, changed := l.cur, l.gen, l.changed
		l.mu.Unlock()
		if conn != nil && !conn.IsClosed() {
			return conn, gen, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("amqpqueue: waiting for the broker (%s): %w", l.name, context.Cause(ctx))
		case <-l.closing:
			return nil, 0, queue.ErrClosed
		}
	}
}

// channel opens a channel on the current connection.
func (l *link) channel(ctx context.Context) (*amqp.Channel, uint64, error) {
	for {
		conn, gen, err := l.current(ctx)
		if err != nil {
			return nil, 0, err
		}
		ch, err := conn.Channel()
		if err == nil {
			return ch, gen, nil
		}
		if !conn.IsClosed() {
			return nil, 0, fmt.Errorf("amqpqueue: open channel (%s): %w", l.name, err)
		}
		// The connection died under us: wait for the next one.
	}
}

// backoff is an exponential delay with full jitter between min and max.
type backoff struct {
	min, max, next time.Duration
}

func (b *backoff) reset() { b.next = 0 }

// wait sleeps for the next delay (none the first time after reset) and
// reports false if stop closed first.
func (b *backoff) wait(stop <-chan struct{}) bool {
	d := b.next
	if b.next == 0 {
		b.next = b.min
	} else {
		b.next = min(b.next*2, b.max)
	}
	if d <= 0 {
		select {
		case <-stop:
			return false
		default:
			return true
		}
	}
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
		return false
	case <-t.C:
		return true
	}
}
