package webhook

import (
	"sync"
	"time"
)

// maxCached bounds the entries of a ttlCache: when full it starts afresh,
// which costs a lookup per entry and never grows memory without bound.
const maxCached = 10_000

// ttlCache remembers values for a while, so that a burst of events of one
// group or tenant costs one store read.
type ttlCache struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]cached
}

type cached struct {
	v   any
	exp time.Time
}

func (c *ttlCache) get(k string, now time.Time) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok || !now.Before(e.exp) {
		return nil, false
	}
	return e.v, true
}

func (c *ttlCache) put(k string, v any, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCached {
		c.m = map[string]cached{}
	}
	c.m[k] = cached{v, now.Add(c.ttl)}
}
