package redislimit

import (
	"sync"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// denyCache remembers denials until the denied request could be allowed
// again. A counter only ever needs longer to recover than Redis said (other
// processes can only add to it), so answering "denied" from here until then
// never admits what Redis would deny.
type denyCache struct {
	mu  sync.RWMutex
	max int
	m   map[denyKey]denial
}

// denyKey names one counter under one limit. Quota and capacity are part of
// it because a raised limit may admit what the old one denied.
type denyKey struct {
	key             string
	quota, capacity int64
}

type denial struct {
	cost    int64     // the least cost known to be denied
	retryAt time.Time // when that cost could be allowed again
	resetAt time.Time
	result  ratelimit.Result
}

func newDenyCache(max int) *denyCache {
	return &denyCache{max: max, m: make(map[denyKey]denial)}
}

func keyOf(key string, l ratelimit.Limit) denyKey {
	return denyKey{key: key, quota: l.Quota, capacity: l.Capacity()}
}

// answer returns a denied Decision when a request of reqs (cost > 0) is
// covered by a cached denial.
func (c *denyCache) answer(now time.Time, keys []string, reqs []ratelimit.Request) (ratelimit.Decision, bool) {
	var results []ratelimit.Result
	c.mu.RLock()
	defer c.mu.RUnlock()
	for i, r := range reqs {
		e, ok := c.m[keyOf(keys[i], r.Limit)]
		if !ok || r.Cost == 0 || r.Cost < e.cost || !now.Before(e.retryAt) {
			continue
		}
		if results == nil {
			results = make([]ratelimit.Result, len(reqs))
			for j, o := range reqs {
				results[j] = ratelimit.Result{Limit: o.Limit, Allowed: true}
			}
		}
		res := e.result
		res.Limit = r.Limit
		res.RetryAfter = e.retryAt.Sub(now)
		res.ResetAfter = max(e.resetAt.Sub(now), res.RetryAfter)
		results[i] = res
	}
	if results == nil {
		return ratelimit.Decision{}, false
	}
	return ratelimit.Decide(results), true
}

// remember caches the denying results of d.
func (c *denyCache) remember(now time.Time, keys []string, reqs []ratelimit.Request, d ratelimit.Decision) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, res := range d.Results {
		r := reqs[i]
		if res.Allowed || r.Cost == 0 || res.RetryAfter <= 0 {
			continue
		}
		k := keyOf(keys[i], r.Limit)
		if e, ok := c.m[k]; ok && now.Before(e.retryAt) && e.cost < r.Cost {
			continue // a cheaper denial already covers this one
		}
		if len(c.m) >= c.max {
			c.evictLocked(now)
		}
		c.m[k] = denial{cost: r.Cost, retryAt: now.Add(res.RetryAfter), resetAt: now.Add(res.ResetAfter), result: res}
	}
}

// evictLocked drops expired entries and, if the cache is still full, an
// arbitrary eighth of it: losing a denial only costs a Redis round trip.
func (c *denyCache) evictLocked(now time.Time) {
	for k, e := range c.m {
		if !now.Before(e.retryAt) {
			delete(c.m, k)
		}
	}
	drop := len(c.m) - c.max + 1 + c.max/8
	for k := range c.m {
		if drop <= 0 {
			break
		}
		delete(c.m, k)
		drop--
	}
}
