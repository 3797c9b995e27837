package redisqueue

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// An idle worker leases again whenever a job of its own ends, when a
// notification wakes it and at every poll. Most of those leases find
// nothing: the lease before found the queues empty, and nothing was
// enqueued since. So a lease that finds its queues empty remembers it,
// with the notifier's generation and the time of the earliest timed work
// it saw (a job due later, a scheduler timer, the end of a pause holding
// ready jobs); the next lease of the same queues is answered empty at
// once, without Redis, while the generation has not moved and that time
// has not come. The generation moves with every message on the queues'
// channels and the timers channel (a job became ready, timed work was
// added), with every (re)subscription, and with every change this process
// makes that may add timed work. It is only trusted while Redis has
// confirmed the subscriptions, and for at most idleMax: pub/sub may lose a
// message without go-redis noticing at once.
const idleMax = 5 * time.Second

// leaseMemo remembers, by queue set, what a lease found, for as long as a
// generation of the notifier has not moved and a time on the local clock
// has not come: the idle leases here, the timed work a lean lease read
// (heads.go).
type leaseMemo[T any] struct {
	mu sync.Mutex
	m  map[string]memoEntry[T]
}

type memoEntry[T any] struct {
	gen   uint64
	until time.Time // the local clock's
	v     T
}

func (m *leaseMemo[T]) get(key string) (memoEntry[T], bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[key]
	return e, ok
}

func (m *leaseMemo[T]) put(key string, e memoEntry[T]) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[string]memoEntry[T]{}
	}
	m.m[key] = e
}

func (m *leaseMemo[T]) drop(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, key)
}

// recall returns what m holds for a lease of qs while it may be trusted:
// recorded at generation gen, before its time, and with every channel
// of qs confirmed subscribed. Never on Cluster, where not every channel
// reaches this process.
func recall[T any](b *Backend, m *leaseMemo[T], qs []*qkeys, gen uint64) (T, bool) {
	var zero T
	if b.cluster {
		return zero, false
	}
	e, ok := m.get(idleKey(qs))
	if !ok || e.gen != gen || !b.localNow().Before(e.until) || !b.notes.heard(channels(qs)) {
		return zero, false
	}
	return e.v, true
}

// idleKey names a lease's queue set.
func idleKey(qs []*qkeys) string {
	if len(qs) == 1 {
		return qs[0].name
	}
	names := make([]string, len(qs))
	for i, k := range qs {
		names[i] = k.name
	}
	return strings.Join(names, "\x00")
}

// idleNow reports whether a lease of qs would find nothing, from what the
// last one found; gen is the generation to record the coming lease at.
func (b *Backend) idleNow(qs []*qkeys) (idle bool, gen uint64) {
	gen = b.notes.gen.Load()
	_, idle = recall(b, &b.idle, qs, gen)
	return idle, gen
}

// channels returns the notification channels of qs.
func channels(qs []*qkeys) []string {
	chans := make([]string, len(qs))
	for i, k := range qs {
		chans[i] = k.channel
	}
	return chans
}

// localUntil returns when Redis time at (µs as text; 0 or unreadable for
// none) comes on the local clock, at most idleMax from now. Redis's
// clock and ours may differ, so it counts from the script's now.
func (b *Backend) localUntil(at string, redisNow time.Time) time.Time {
	now := b.localNow()
	if n, err := strconv.ParseInt(at, 10, 64); err == nil && n > 0 {
		if d := time.UnixMicro(n).Sub(redisNow); d < idleMax {
			return now.Add(d)
		}
	}
	return now.Add(idleMax)
}

// idleAfter records what a lease begun at generation gen found: idle is
// the script's idle-until (empty when not idle, "0" for no timed work,
// else Redis µs), redisNow the script's time.
func (b *Backend) idleAfter(qs []*qkeys, gen uint64, idle string, redisNow time.Time) {
	if b.cluster {
		return
	}
	if idle == "" {
		b.idle.drop(idleKey(qs))
		return
	}
	b.idle.put(idleKey(qs), memoEntry[struct{}]{gen: gen, until: b.localUntil(idle, redisNow)})
}

// localNow is the time idle leases are timed by: the injected clock's, if
// any, so tests that move it see due work at once.
func (b *Backend) localNow() time.Time {
	if b.clk != nil {
		return b.clk.Now()
	}
	return time.Now()
}

// quietScripts are the scripts that move jobs but never add timed work
// the lease cannot see coming: the lease itself (it reads the timers
// after its own changes), complete (a job it ends can only make jobs
// ready, which is published), and enqueue unless a call says otherwise.
var quietScripts = map[*redis.Script]bool{scriptLease: true, scriptComplete: true, scriptEnqueue: true}

// bump moves the notifier's generation after a call that may have added
// timed work, so this process's own idle leases look again at once.
func (b *Backend) bump(c *call) {
	if c.timed || (movers[c.script] && !quietScripts[c.script]) {
		b.notes.bump()
	}
}
