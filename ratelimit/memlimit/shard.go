package memlimit

import (
	"sync"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// counterKey names one counter: the request key and the limit's ID
// (algorithm and window), kept as a struct so that a lookup allocates
// nothing.
type counterKey struct {
	key    string
	alg    ratelimit.Algorithm
	window time.Duration
}

func keyOf(r *ratelimit.Request) counterKey {
	return counterKey{key: r.Key, alg: r.Limit.Algorithm, window: r.Limit.Window}
}

// mapKey folds the limit ID into the key's hash. The shard maps are keyed
// by this 64-bit value rather than by counterKey, so a lookup hashes the
// key string once (the same hash picks the shard) and compares it once;
// the rare collisions are chained through entry.same.
func mapKey(keyHash uint64, k counterKey) uint64 {
	return keyHash ^ (uint64(k.window)*0x9E3779B97F4A7C15 + uint64(k.alg))
}

// entry is one counter in a shard's map and in its recency list. It is
// laid out in two 64-byte cache lines: the first holds all a hit on a
// single request reads and writes, the second the bookkeeping.
type entry struct {
	key    string
	window time.Duration
	alg    ratelimit.Algorithm
	used   bool // used since last placed in the list (second chance)
	st     state
	exp    int64 // µs since the epoch when st holds nothing any more

	h          uint64 // mapKey of the counter
	same       *entry // next entry with the same mapKey
	op         uint64 // the shard operation that pinned it last
	prev, next *entry // recency list
	_          [24]byte
}

// is reports whether e is the counter k; the key string is compared last,
// and equal keys usually share their bytes, which the comparison checks
// first.
func (e *entry) is(k counterKey) bool {
	return e.window == k.window && e.alg == k.alg && e.key == k.key
}

// shard is one lock's worth of counters. The recency list lets the shard
// drop the least recently used counter when full, and find expired ones
// cheaply at its tail.
type shard struct {
	mu   sync.Mutex
	m    map[uint64]*entry
	head entry // sentinel of the circular recency list
	max  int
	op   uint64 // bumped at every locked operation; pins entries in use
	// free holds dropped entries for reuse, chained through entry.same.
	free  *entry
	nfree int
	_     [64]byte
}

func (sh *shard) init(max int) {
	sh.m = make(map[uint64]*entry)
	sh.head.next, sh.head.prev = &sh.head, &sh.head
	sh.max = max
}

// lock takes the shard and starts an operation: entries touched until
// unlock are pinned and will not be evicted or reused.
func (sh *shard) lock() {
	sh.mu.Lock()
	sh.op++
}

func (sh *shard) unlock() { sh.mu.Unlock() }

// get returns the counter for k (nil when absent) and marks it used. It
// does not move the entry in the recency list: on random access that would
// touch two neighbouring entries' cache lines per call. The list is put in
// order lazily, when evicting (second chance).
func (sh *shard) get(h uint64, k counterKey) *entry {
	e := sh.m[h]
	for e != nil && !e.is(k) {
		e = e.same
	}
	if e != nil {
		e.used = true
	}
	return e
}

// pin keeps e from being evicted or reused until the shard is unlocked,
// for decisions that insert after looking up.
func (sh *shard) pin(e *entry) { e.op = sh.op }

// insert adds an empty counter for k. When the shard is full it first
// drops one: an expired counter if the clock hand finds one, else one not
// used recently. Expired counters are otherwise left to Sweep: dropping
// them here, on every insert, would make keys that come back every window
// churn. Dropped entries are kept for reuse, so steady traffic allocates
// nothing.
func (sh *shard) insert(h uint64, k counterKey, now int64) *entry {
	if len(sh.m) >= sh.max {
		if e := sh.victim(now); e != nil {
			sh.release(sh.remove(e))
		}
	}
	e := sh.free
	if e != nil {
		sh.free, sh.nfree = e.same, sh.nfree-1
	} else {
		e = new(entry)
	}
	*e = entry{key: k.key, window: k.window, alg: k.alg, h: h, op: sh.op, same: sh.m[h]}
	sh.m[h] = e
	sh.pushFront(e)
	return e
}

// victim picks the entry to evict, walking from the tail: an expired entry
// at once; otherwise entries used since they were last placed get a second
// chance at the front (the clock algorithm, an approximation of least
// recently used). Pinned entries are skipped; nil when all are pinned.
func (sh *shard) victim(now int64) *entry {
	for range len(sh.m) + 1 {
		e := sh.head.prev
		if e == &sh.head {
			return nil
		}
		if e.op != sh.op && (e.exp <= now || !e.used) {
			return e
		}
		e.used = false
		sh.unlink(e)
		sh.pushFront(e)
	}
	return nil
}

// maxFree bounds the entries a shard keeps for reuse.
const maxFree = 16

// release keeps a dropped entry for reuse, up to maxFree.
func (sh *shard) release(e *entry) {
	if sh.nfree < maxFree {
		*e = entry{same: sh.free}
		sh.free, sh.nfree = e, sh.nfree+1
	}
}

func (sh *shard) remove(e *entry) *entry {
	if first := sh.m[e.h]; first == e {
		if e.same == nil {
			delete(sh.m, e.h)
		} else {
			sh.m[e.h] = e.same
		}
	} else {
		for first.same != e {
			first = first.same
		}
		first.same = e.same
	}
	sh.unlink(e)
	return e
}

// sweep drops every counter that expired by now and reports how many.
func (sh *shard) sweep(now int64) int {
	n := 0
	for e := sh.head.prev; e != &sh.head; {
		prev := e.prev
		if e.exp <= now && e.op != sh.op {
			sh.release(sh.remove(e))
			n++
		}
		e = prev
	}
	return n
}

func (sh *shard) unlink(e *entry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (sh *shard) pushFront(e *entry) {
	e.prev, e.next = &sh.head, sh.head.next
	sh.head.next.prev = e
	sh.head.next = e
}
