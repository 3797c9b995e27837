package config

import (
	"sort"
	"strings"

	"github.com/sluicehq/sluice/queue"
)

// Priority computes the priority of each job with a tenant from the
// tenant's recent load, as Firecrawl does (queue.LoadPriority): a tenant
// that enqueued up to its tier's bucket of jobs in the last Window gets
// Base; each job above adds the tier's modifier, so a tenant sending more
// than its plan allows is served after the others. The job's own priority
// is replaced. Off unless Enabled.
type Priority struct {
	// Enabled turns load-based priority on; default false.
	Enabled bool `yaml:"enabled"`
	// Base is the priority of a tenant within its bucket, from 0 to
	// queue.MaxPriority; absent means 10 (queue.DefaultBasePriority). A
	// pointer so that an explicit "base: 0" is told from an absent key.
	Base *int `yaml:"base"`
	// Window is how far back a tenant's enqueues count; default 1m.
	Window Duration `yaml:"window"`
	// DefaultTier is the tier of a tenant that no other rule places;
	// default "standard".
	DefaultTier string `yaml:"default_tier"`
	// Tiers adds tiers, or redefines the built-in ones: free (25, 0.5),
	// hobby (100, 0.3), standard (200, 0.2), growth (400, 0.1) and
	// enterprise (1000, 0.05).
	Tiers map[string]Tier `yaml:"tiers"`
	// Tenants places tenants in tiers by name; it wins over ByConcurrency.
	Tenants map[string]string `yaml:"tenants"`
	// ByConcurrency places a tenant by its settings: the first rule (in
	// descending Min order) whose Min its effective concurrency limit
	// reaches gives its tier, so a tenant's plan, set with PUT
	// /v1/tenants/{tenant} or queues.tenants, sets its priority tier too.
	// A tenant without a limit counts as unlimited: it reaches every rule.
	ByConcurrency []ConcurrencyTier `yaml:"by_concurrency"`
}

// Tier is one step of load-based priority (queue.Tier).
type Tier struct {
	// Bucket is how many recent jobs keep the base priority; positive.
	Bucket int64 `yaml:"bucket"`
	// Modifier is added per job above the bucket; positive.
	Modifier float64 `yaml:"modifier"`
}

// ConcurrencyTier gives Tier to tenants whose concurrency limit is at
// least Min.
type ConcurrencyTier struct {
	// Min is the least concurrency limit; positive.
	Min int `yaml:"min"`
	// Tier names a tier. Required.
	Tier string `yaml:"tier"`
}

// BuiltinTiers are the tiers every config knows, by name.
var BuiltinTiers = map[string]queue.Tier{
	"free": queue.TierFree, "hobby": queue.TierHobby, "standard": queue.TierStandard,
	"growth": queue.TierGrowth, "enterprise": queue.TierEnterprise,
}

// DefaultTier is Priority.DefaultTier's default.
const DefaultTier = "standard"

// TierTable returns every tier by name: the built-in ones, then Tiers.
func (p Priority) TierTable() map[string]queue.Tier {
	out := make(map[string]queue.Tier, len(BuiltinTiers)+len(p.Tiers))
	for k, t := range BuiltinTiers {
		out[k] = t
	}
	for k, t := range p.Tiers {
		out[k] = queue.Tier{Bucket: t.Bucket, Modifier: t.Modifier}
	}
	return out
}

// BaseOrDefault returns Base, or its default.
func (p Priority) BaseOrDefault() int {
	if p.Base == nil {
		return queue.DefaultBasePriority
	}
	return *p.Base
}

// DefaultTierName returns DefaultTier, or its default.
func (p Priority) DefaultTierName() string {
	if p.DefaultTier == "" {
		return DefaultTier
	}
	return p.DefaultTier
}

// SortedByConcurrency returns ByConcurrency, highest Min first.
func (p Priority) SortedByConcurrency() []ConcurrencyTier {
	out := append([]ConcurrencyTier(nil), p.ByConcurrency...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Min > out[j].Min })
	return out
}

func (v *validator) priority(pr Priority) {
	base := []any{"queues", "priority"}
	if b := pr.Base; b != nil && (*b < 0 || *b > queue.MaxPriority) {
		v.add(p(base, "base"), "must be from 0 to %d (absent: %d), got %d", queue.MaxPriority, queue.DefaultBasePriority, *b)
	}
	v.nonNegativeDuration(p(base, "window"), pr.Window)
	if pr.Window > 0 && pr.Window.D()%1e6 != 0 {
		v.add(p(base, "window"), "must be a whole number of milliseconds, got %s", pr.Window)
	}
	for _, name := range sortedKeys(pr.Tiers) {
		v.name(p(base, "tiers", name), "tier", name)
		t := pr.Tiers[name]
		if t.Bucket <= 0 {
			v.add(p(base, "tiers", name, "bucket"), "must be a positive integer, got %d", t.Bucket)
		}
		if t.Modifier <= 0 {
			v.add(p(base, "tiers", name, "modifier"), "must be positive, got %v", t.Modifier)
		}
	}
	known := pr.TierTable()
	tier := func(path []any, name string) {
		if _, ok := known[name]; !ok {
			v.add(path, "unknown tier %q (known: %s)", name, strings.Join(sortedKeys(known), ", "))
		}
	}
	if pr.DefaultTier != "" {
		tier(p(base, "default_tier"), pr.DefaultTier)
	}
	for _, t := range sortedKeys(pr.Tenants) {
		tier(p(base, "tenants", t), pr.Tenants[t])
	}
	for i, r := range pr.ByConcurrency {
		if r.Min <= 0 {
			v.add(p(base, "by_concurrency", i, "min"), "must be a positive integer, got %d", r.Min)
		}
		if r.Tier == "" {
			v.add(p(base, "by_concurrency", i, "tier"), "is required: a tier name such as growth")
		} else {
			tier(p(base, "by_concurrency", i, "tier"), r.Tier)
		}
	}
}
