package memlimit

import (
	"slices"

	"github.com/sluicehq/sluice/ratelimit"
)

// pending is one request of a multi-request decision between judging and
// committing.
type pending struct {
	sh   *shard
	h    uint64 // mapKey
	e    *entry
	st   state // the counter before the decision
	next state // the counter if the decision is allowed
}

// many decides several requests as one: it locks every shard involved
// (each once, in ascending index order, so two calls can never wait on
// each other), judges every request on the state before the call, and
// commits only when all are allowed.
func (s *Store) many(reqs []ratelimit.Request, results []ratelimit.Result, now int64) {
	// Up to 8 requests stay on the stack; append spills beyond that.
	var hashBuf, lockBuf [8]uint64
	var pendBuf [8]pending
	hashes, pend := hashBuf[:0], pendBuf[:0]
	for _, r := range reqs {
		hashes = append(hashes, s.hash(r.Key))
	}
	locks := append(lockBuf[:0], hashes...)
	for i := range locks {
		locks[i] &= s.mask
	}
	slices.Sort(locks)
	locks = slices.Compact(locks)
	for _, i := range locks {
		s.shards[i].lock()
	}
	defer func() {
		for _, i := range locks {
			s.shards[i].unlock()
		}
	}()

	allowed := true
	for i := range reqs {
		r := &reqs[i]
		k := keyOf(r)
		p := pending{sh: s.shardOf(hashes[i]), h: mapKey(hashes[i], k)}
		if p.e = p.sh.get(p.h, k); p.e != nil {
			p.sh.pin(p.e)
			p.st = p.e.st
		}
		p.next = p.st
		decide(&p.next, &r.Limit, r.Cost, now, &results[i])
		allowed = allowed && results[i].Allowed
		pend = append(pend, p)
	}
	for i := range reqs {
		r, p := &reqs[i], &pend[i]
		switch {
		case !allowed && results[i].Allowed:
			unchanged(p.st, &r.Limit, now, &results[i])
		case allowed && r.Cost > 0:
			if p.e == nil {
				p.e = p.sh.insert(p.h, keyOf(r), now)
			}
			p.e.st, p.e.exp = p.next, p.next.expires(r.Limit)
		}
	}
}
