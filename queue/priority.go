package queue

import (
	"context"
	"math"
	"time"

	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/ratelimit"
)

// PriorityFunc computes the priority of a job about to be enqueued from its
// spec and its tenant's recent load: how many jobs the tenant enqueued in
// the last PriorityConfig.Window, this one included, or 0 when no load
// store is set or it fails. The result is clamped to [0, MaxPriority]. Set
// it in ClientConfig.Priority.
type PriorityFunc func(spec JobSpec, recent int64) int

// Tier is one step of LoadPriority: up to Bucket recent jobs keep the base
// priority; each job above adds Modifier.
type Tier struct {
	Bucket   int64
	Modifier float64
}

// Ready-made tiers, from the lightest plan to the heaviest: the more a
// plan may send, the later its load starts to push its jobs back.
var (
	TierFree       = Tier{Bucket: 25, Modifier: 0.5}
	TierHobby      = Tier{Bucket: 100, Modifier: 0.3}
	TierStandard   = Tier{Bucket: 200, Modifier: 0.2}
	TierGrowth     = Tier{Bucket: 400, Modifier: 0.1}
	TierEnterprise = Tier{Bucket: 1000, Modifier: 0.05}
)

// DefaultBasePriority is the base of LoadPriority.
const DefaultBasePriority = 10

// Priority returns the priority of a job whose tenant sent n jobs
// recently: base up to the bucket, then ceil(base + (n − bucket) ×
// modifier). A lower priority runs first, so a tenant sending more than
// its tier allows is served after the others.
func (t Tier) Priority(base int, n int64) int {
	if n <= t.Bucket {
		return base
	}
	// The product of a decimal modifier is inexact in binary (30 × 0.1 is
	// 3.0000000000000004): a whole result must not round up past itself.
	p := math.Ceil(float64(base) + float64(n-t.Bucket)*t.Modifier - 1e-9)
	if p > MaxPriority {
		return MaxPriority
	}
	return int(p)
}

// LoadPriority returns a PriorityFunc that gives every job
// tierOf(tenant).Priority(base, recent), ignoring the spec's own Priority.
// A nil tierOf puts everyone in TierStandard.
func LoadPriority(base int, tierOf func(tenant string) Tier) PriorityFunc {
	if tierOf == nil {
		tierOf = func(string) Tier { return TierStandard }
	}
	return func(s JobSpec, recent int64) int { return tierOf(s.Tenant).Priority(base, recent) }
}

// DefaultLoadWindow is how far back ClientConfig.Priority looks by default.
const DefaultLoadWindow = time.Minute

// loadQuota is the quota of the load counter: high enough never to deny,
// since the counter only measures, and exact as a float64 in Lua.
const loadQuota = 1 << 50

// PriorityConfig makes a Client compute the priority of the jobs it
// enqueues (ClientConfig.Priority). The zero value leaves priorities as
// given.
type PriorityConfig struct {
	// Func computes a job's priority. Default none: specs keep their own.
	// It runs only for specs with a Tenant.
	Func PriorityFunc
	// Load counts each tenant's enqueues (a sliding-window counter under
	// the key queue-load:tenant:<tenant>), shared by every client using the
	// same store. Default none: recent is always 0.
	Load ratelimit.Store
	// Window is how far back the count reaches; default DefaultLoadWindow
	// (1 minute).
	Window time.Duration
}

// apply runs Func on each spec that has a tenant, counting the spec in its
// tenant's load. The load store is asked once per tenant in the batch, for
// all of that tenant's specs at once; the specs then see the counts they
// would have seen one by one (the first n − k + 1, the last n). A store
// fault gives the tenant's specs Func(spec, 0), the base of LoadPriority,
// as if the tenant had sent nothing: the job is neither refused for it nor
// left with its own priority (0, the most urgent, by default), which would
// push every tenant to the front while the load store is down.
func (p PriorityConfig) apply(ctx context.Context, specs []JobSpec) {
	if p.Func == nil {
		return
	}
	byTenant := map[string][]int{}
	var order []string
	for i, s := range specs {
		if s.Tenant == "" {
			continue
		}
		if _, seen := byTenant[s.Tenant]; !seen {
			order = append(order, s.Tenant)
		}
		byTenant[s.Tenant] = append(byTenant[s.Tenant], i)
	}
	for _, tenant := range order {
		idx := byTenant[tenant]
		k := int64(len(idx))
		n, ok := p.recent(ctx, tenant, k)
		for j, i := range idx {
			recent := int64(0)
			if ok {
				recent = max(n-k+int64(j)+1, 0)
			}
			specs[i].Priority = min(max(p.Func(specs[i], recent), 0), MaxPriority)
		}
	}
}

// recent counts k more jobs for tenant in one store call and returns its
// count over the window after them (the sliding-window estimate), or false
// on a store fault.
func (p PriorityConfig) recent(ctx context.Context, tenant string, k int64) (int64, bool) {
	if p.Load == nil {
		return 0, false // nothing counts the load: every spec sees 0
	}
	window := p.Window
	if window <= 0 {
		window = DefaultLoadWindow
	}
	key, err := keyspace.Join("queue-load", "tenant", tenant)
	if err != nil {
		return 0, false
	}
	lim := ratelimit.Per(loadQuota, window).With(ratelimit.SlidingWindow)
	d, err := p.Load.Consume(ctx, ratelimit.Request{Key: key, Limit: lim, Cost: k})
	if err != nil || len(d.Results) == 0 {
		return 0, false
	}
	return d.Results[0].Used, true
}
