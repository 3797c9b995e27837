package memlimit

import (
	"slices"

	"github.com/sluicehq/sluice/ratelimit"
)

// slot is one request's counter while its shards are locked: the entry
// (nil when absent) and its state before the operation.
type slot struct {
	sh *shard
	h  uint64
	e  *entry
	st state
}

// lockSlots locks every shard of reqs (each once, in ascending index
// order, like many) and looks up their counters, pinning them. The
// returned function unlocks.
func (s *Store) lockSlots(reqs []ratelimit.Request) ([]slot, func()) {
	hashes := make([]uint64, len(reqs))
	locks := make([]uint64, len(reqs))
	for i, r := range reqs {
		hashes[i] = s.hash(r.Key)
		locks[i] = hashes[i] & s.mask
	}
	slices.Sort(locks)
	locks = slices.Compact(locks)
	for _, i := range locks {
		s.shards[i].lock()
	}
	slots := make([]slot, len(reqs))
	for i := range reqs {
		k := keyOf(&reqs[i])
		sl := slot{sh: s.shardOf(hashes[i]), h: mapKey(hashes[i], k)}
		if sl.e = sl.sh.get(sl.h, k); sl.e != nil {
			sl.sh.pin(sl.e)
			sl.st = sl.e.st
		}
		slots[i] = sl
	}
	return slots, func() {
		for _, i := range locks {
			s.shards[i].unlock()
		}
	}
}

// put stores st as r's counter, inserting the entry when absent.
func (sl *slot) put(r *ratelimit.Request, st state, now int64) {
	if sl.e == nil {
		sl.e = sl.sh.insert(sl.h, keyOf(r), now)
	}
	sl.e.st, sl.e.exp = st, st.expires(r.Limit)
}

// peekAll writes into results what a cost-0 request of each would report.
func peekAll(slots []slot, reqs []ratelimit.Request, now int64, results []ratelimit.Result) {
	for i := range reqs {
		unchanged(slots[i].st, &reqs[i].Limit, now, &results[i])
	}
}

// decideAll decides reqs, each at cost (negative: at its own Cost), as
// many does on locked slots: judged on the state before the call,
// committed only when all are allowed.
func decideAll(slots []slot, reqs []ratelimit.Request, cost, now int64, results []ratelimit.Result) bool {
	next := make([]state, len(reqs))
	costs := make([]int64, len(reqs))
	allowed := true
	for i := range reqs {
		costs[i] = cost
		if cost < 0 {
			costs[i] = reqs[i].Cost
		}
		next[i] = slots[i].st
		decide(&next[i], &reqs[i].Limit, costs[i], now, &results[i])
		allowed = allowed && results[i].Allowed
	}
	for i := range reqs {
		switch {
		case !allowed && results[i].Allowed:
			unchanged(slots[i].st, &reqs[i].Limit, now, &results[i])
		case allowed && costs[i] > 0:
			slots[i].put(&reqs[i], next[i], now)
			slots[i].st = next[i]
		}
	}
	return allowed
}
