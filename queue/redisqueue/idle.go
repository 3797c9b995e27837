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

// idleLeases holds, by queue set, what the last empty lease found.
type idleLeases struct {
	mu sync.Mutex
	m  map[string]idleLease
}

type idleLease struct {
	gen   uint64
	until time.Time // the local clock's
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
	if b.cluster {
		return false, gen
	}
	key := idleKey(qs)
	b.idle.mu.Lock()
	l, ok := b.idle.m[key]
	b.idle.mu.Unlock()
	if !ok || l.gen != gen || !b.localNow().Before(l.until) {
		return false, gen
	}
	return b.notes.heard(channels(qs)), gen
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
	key := idleKey(qs)
	b.idle.mu.Lock()
	defer b.idle.mu.Unlock()
	if idle == "" {
		delete(b.idle.m, key)
		return
	}
	if b.idle.m == nil {
		b.idle.m = map[string]idleLease{}
	}
	b.idle.m[key] = idleLease{gen: gen, until: b.localUntil(idle, redisNow)}
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
