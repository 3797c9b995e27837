package memlimit

import (
	"context"
	"strconv"
	"sync"

	"github.com/sluicehq/sluice/ratelimit"
)

var _ ratelimit.Acquirer = (*Store)(nil)

// leaseTable holds the in-flight leases: per key, each lease's expiry in
// µs since the epoch. Its zero value is empty and ready. Keys without a
// live lease are dropped when next touched or swept, so memory follows the
// leases held.
type leaseTable struct {
	mu  sync.Mutex
	m   map[string]map[string]int64
	seq uint64
}

// live drops key's expired leases and returns the rest (nil when none).
// The table must be locked.
func (t *leaseTable) live(key string, now int64) map[string]int64 {
	set := t.m[key]
	for id, exp := range set {
		if exp <= now {
			delete(set, id)
		}
	}
	if len(set) == 0 && set != nil {
		delete(t.m, key)
		return nil
	}
	return set
}

func (t *leaseTable) reset(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.m[key])
	delete(t.m, key)
	return n
}

func (t *leaseTable) sweep(now int64) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for key, set := range t.m {
		before := len(set)
		n += before - len(t.live(key, now))
	}
	return n
}

// Acquire grants an in-flight lease when the key holds fewer than Max live
// leases and every window request admits its cost, all under the lease
// table's lock and the counters' shard locks. See ratelimit.Acquirer.
func (s *Store) Acquire(ctx context.Context, r ratelimit.AcquireRequest) (ratelimit.Acquisition, error) {
	if err := s.check(ctx, "acquire"); err != nil {
		return ratelimit.Acquisition{}, err
	}
	if err := r.Validate(); err != nil {
		return ratelimit.Acquisition{}, err
	}
	now := s.now()
	t := &s.leases
	t.mu.Lock()
	defer t.mu.Unlock()
	set := t.live(r.Key, now)
	a := ratelimit.Acquisition{Held: int64(len(set)), InFlightAllowed: int64(len(set)) < r.InFlight.Max}
	results := make([]ratelimit.Result, len(r.Requests))
	var slots []slot
	if len(r.Requests) > 0 {
		var unlock func()
		slots, unlock = s.lockSlots(r.Requests)
		defer unlock()
	}
	if !a.InFlightAllowed {
		peekAll(slots, r.Requests, now, results)
		a.Decision = ratelimit.Decide(results)
		a.RetryAfter = dur(earliest(set) - now)
		return a, nil
	}
	if !decideAll(slots, r.Requests, -1, now, results) {
		a.Decision = ratelimit.Decide(results)
		a.RetryAfter = a.Decision.RetryAfter
		return a, nil
	}
	if set == nil {
		if t.m == nil {
			t.m = map[string]map[string]int64{}
		}
		set = map[string]int64{}
		t.m[r.Key] = set
	}
	t.seq++
	id := strconv.FormatUint(t.seq, 36)
	set[id] = now + r.InFlight.TTL.Microseconds()
	a.Allowed, a.Held, a.Decision = true, a.Held+1, ratelimit.Decide(results)
	a.Lease = ratelimit.Lease{Key: r.Key, ID: id, TTL: r.InFlight.TTL}
	return a, nil
}

func earliest(set map[string]int64) int64 {
	first := int64(-1)
	for _, exp := range set {
		if first < 0 || exp < first {
			first = exp
		}
	}
	return first
}

// Release gives a lease back. See ratelimit.Acquirer.
func (s *Store) Release(ctx context.Context, l ratelimit.Lease) (bool, error) {
	if l.Key == "" || l.ID == "" {
		return false, ratelimit.InvalidArgument("Lease", "must have a key and an ID")
	}
	now := s.now()
	t := &s.leases
	t.mu.Lock()
	defer t.mu.Unlock()
	set := t.live(l.Key, now)
	_, ok := set[l.ID]
	delete(set, l.ID)
	t.live(l.Key, now)
	return ok, nil
}

// Held reports the live leases under key. See ratelimit.Acquirer.
func (s *Store) Held(ctx context.Context, key string) (int64, error) {
	now := s.now()
	t := &s.leases
	t.mu.Lock()
	defer t.mu.Unlock()
	return int64(len(t.live(key, now))), nil
}
