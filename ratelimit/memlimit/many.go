package memlimit

import (
	"slices"

	"github.com/sluicehq/sluice/ratelimit"
)

// pending is one request of a multi-request decision between judging and
// committing.
type pending struct {
	sh   *shard
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
	var idxBuf, lockBuf [8]int
	var pendBuf [8]pending
	idx, pend := idxBuf[:0], pendBuf[:0]
	for _, r := range reqs {
		idx = append(idx, s.shardOf(r.Key))
	}
	locks := append(lockBuf[:0], idx...)
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
	for i, r := range reqs {
		p := pending{sh: &s.shards[idx[i]]}
		if p.e = p.sh.get(keyOf(r)); p.e != nil {
			p.st = p.e.st
		}
		p.next, results[i] = decide(p.st, r.Limit, r.Cost, now)
		allowed = allowed && results[i].Allowed
		pend = append(pend, p)
	}
	for i, r := range reqs {
		p := &pend[i]
		switch {
		case !allowed && results[i].Allowed:
			results[i] = unchanged(p.st, r.Limit, now)
		case allowed && r.Cost > 0:
			if p.e == nil {
				p.e = p.sh.insert(keyOf(r), now)
			}
			p.e.st, p.e.exp = p.next, p.next.expires(r.Limit)
		}
	}
}
