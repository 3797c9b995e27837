package server

import (
	"context"
	"sync"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/config"
)

// tierCacheFor is how long a tenant's tier found from its settings
// (queues.priority.by_concurrency) is reused, so that enqueues do not read
// the tenant's settings every time. A plan change shows within it.
const tierCacheFor = 10 * time.Second

// tierCacheMax bounds the tenants remembered; past it the cache starts
// over.
const tierCacheMax = 10000

// tierLookup bounds the read of a tenant's settings during an enqueue.
const tierLookup = 200 * time.Millisecond

// tierCache places tenants in priority tiers: by name from
// queues.priority.tenants, else by their concurrency limit from
// queues.priority.by_concurrency, else the default tier.
type tierCache struct {
	s *Server

	mu   sync.Mutex
	seen map[string]cachedTier
}

type cachedTier struct {
	tier string
	at   time.Time
}

func newTierCache(s *Server) *tierCache { return &tierCache{s: s} }

// reset forgets every tier found, after a config change.
func (c *tierCache) reset() {
	c.mu.Lock()
	c.seen = nil
	c.mu.Unlock()
}

// priorityFunc is queue.LoadPriority with pr's base and tiers.
func (c *tierCache) priorityFunc(pr config.Priority) queue.PriorityFunc {
	table := pr.TierTable()
	rules := pr.SortedByConcurrency()
	def := pr.DefaultTierName()
	return queue.LoadPriority(pr.BaseOrDefault(), func(tenant string) queue.Tier {
		name, ok := pr.Tenants[tenant]
		if !ok {
			name = c.byConcurrency(tenant, rules, def)
		}
		return table[name]
	})
}

// byConcurrency finds tenant's tier by its effective concurrency limit;
// def when no rule matches or the settings cannot be read.
func (c *tierCache) byConcurrency(tenant string, rules []config.ConcurrencyTier, def string) string {
	if len(rules) == 0 {
		return def
	}
	now := time.Now()
	c.mu.Lock()
	if t, ok := c.seen[tenant]; ok && now.Sub(t.at) < tierCacheFor {
		c.mu.Unlock()
		return t.tier
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), tierLookup)
	defer cancel()
	info, err := c.s.jobs.Tenant(ctx, tenant)
	if err != nil {
		return def // not cached: the next enqueue tries again
	}
	tier := def
	limit := info.Effective.Limit
	for _, r := range rules {
		if limit == queue.Unlimited || limit >= r.Min {
			tier = r.Tier
			break
		}
	}
	c.mu.Lock()
	if c.seen == nil || len(c.seen) >= tierCacheMax {
		c.seen = map[string]cachedTier{}
	}
	c.seen[tenant] = cachedTier{tier: tier, at: now}
	c.mu.Unlock()
	return tier
}
