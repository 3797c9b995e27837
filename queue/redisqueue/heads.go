package redisqueue

import "time"

// A lean lease reads the head of each of its queues' timed sets
// (scheduled, retrying) and of the scheduler's timers before it takes
// ready jobs, to hand the run to the full lease when any is due. Timed
// work only comes sooner when someone adds it, and whoever adds it
// publishes on the timers channel (lib.lua's timed, lean_enqueue.lua) or,
// in this process, bumps the notifier. So a lease that read the heads
// remembers the earliest, with the notifier's timers generation, and the
// next lean leases of the same queues pass it in instead of reading them
// again while the generation has not moved and that time has not come —
// three commands fewer per lease. As for idle leases (idle.go), it is
// trusted only while Redis has confirmed the subscriptions, and for at
// most idleMax: pub/sub may lose a message without go-redis noticing at
// once, and the heads are then read again.

// headsKnown returns the earliest timed work of qs as the lean lease
// takes it ("0" for none), or "" when the lease is to read it; tgen is the
// generation to record the coming read at.
func (b *Backend) headsKnown(qs []*qkeys) (at string, tgen uint64) {
	tgen = b.notes.tgen.Load()
	at, _ = recall(b, &b.heads, qs, tgen)
	return at, tgen
}

// headsRead records the earliest timed work a lease begun at generation
// tgen read: at in Redis µs ("0" for none), redisNow the script's time.
func (b *Backend) headsRead(qs []*qkeys, tgen uint64, at string, redisNow time.Time) {
	if b.cluster || at == "" {
		return
	}
	b.heads.put(idleKey(qs), memoEntry[string]{gen: tgen, until: b.localUntil(at, redisNow), v: at})
}
