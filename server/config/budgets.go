package config

import (
	"errors"
	"slices"
	"sort"
	"strings"

	"github.com/sluicehq/sluice/budget"
)

// Budgets is the budgets: section: the shared upstream budgets jobs
// spend, and the claims jobs make by default. It is hot-reloaded: a new
// version's definitions replace the old ones at once (counters are kept
// per budget, unit and window, so a changed quota keeps its count).
//
//	budgets:
//	  definitions:
//	    openai:
//	      requests: {quota: 500, window: 1m}
//	      units:
//	        tokens: {quota: 200000, window: 1m}
//	      in_flight: 50
//	      per_tenant:
//	        requests: {quota: 60, window: 1m}
//	      share: {floor: 0.05, ceiling: 0.5}
//	  queue_claims:
//	    summarise: {openai: {requests: 1, tokens: 1200}}
//	  kind_claims:
//	    summarise-long: {openai: {tokens: 8000}}
type Budgets struct {
	// Definitions maps a budget name to its limits.
	Definitions map[string]BudgetDef `yaml:"definitions"`
	// QueueClaims are the default claims of a queue's jobs: queue name,
	// then budget name, then estimated cost by unit. A job that names its
	// own budgets replaces these.
	QueueClaims map[string]map[string]map[string]int64 `yaml:"queue_claims"`
	// KindClaims are the default claims of a kind's jobs, in any queue;
	// for a budget both name, the kind's claim wins over the queue's.
	KindClaims map[string]map[string]map[string]int64 `yaml:"kind_claims"`
	// PauseQueues says every job of a queue with claims claims the same
	// budgets (a queue per upstream): a hold on a budget's total then
	// pauses the whole queue until room is expected, which keeps the
	// fleet from leasing jobs the budget cannot admit and keeps tenants'
	// fair order (queue.JobBudgets.PauseQueue). Default false.
	PauseQueues bool `yaml:"pause_queues"`
}

// BudgetDef is one budget (budget.Config in the file's words).
type BudgetDef struct {
	// BudgetLimits are the budget's total limits.
	BudgetLimits `yaml:",inline"`
	// PerTenant are the limits each tenant has on its own; default none.
	PerTenant BudgetLimits `yaml:"per_tenant"`
	// Share sets each tenant's floor and ceiling of the total; default
	// none (see budget.Share for the floor rule).
	Share BudgetShare `yaml:"share"`
	// Adaptive lets the total rates follow the upstream (decrease on 429,
	// increase slowly on success); default off (see budget.Adaptive).
	Adaptive BudgetAdaptive `yaml:"adaptive"`
	// Lease is how long an admitted job holds its in-flight place unless
	// it settles first; default 10m.
	Lease Duration `yaml:"lease"`
}

// BudgetLimits are the limits of one scope of a budget.
type BudgetLimits struct {
	// Requests limits claims per window; default none.
	Requests *BudgetRate `yaml:"requests"`
	// Units limits named units (tokens, bytes, credits) per window.
	Units map[string]BudgetRate `yaml:"units"`
	// InFlight is how many admitted jobs may hold the budget at once; 0
	// (default): no limit.
	InFlight int64 `yaml:"in_flight"`
}

// BudgetRate is a token bucket of Quota per Window with Burst.
type BudgetRate struct {
	// Quota is the units admitted per window. Required, positive.
	Quota int64 `yaml:"quota"`
	// Window is the refill period, such as "1s" or "1m". Required.
	Window Duration `yaml:"window"`
	// Burst is the most admitted at once; default Quota.
	Burst int64 `yaml:"burst"`
}

// BudgetShare is each tenant's floor and ceiling of a budget's total, as
// fractions.
type BudgetShare struct {
	// Floor is the fraction guaranteed to each tenant; default 0.
	Floor float64 `yaml:"floor"`
	// Ceiling is the most any one tenant may use; default 0 (none).
	Ceiling float64 `yaml:"ceiling"`
	// Reserve is the fraction kept for tenants under their floor; default
	// the floor.
	Reserve float64 `yaml:"reserve"`
}

// BudgetAdaptive bounds and paces a budget's adaptation.
type BudgetAdaptive struct {
	// Min is the least fraction of the configured rates; 0 (default)
	// turns adaptation off.
	Min float64 `yaml:"min"`
	// Decrease multiplies the rates on a refusal; default 0.5.
	Decrease float64 `yaml:"decrease"`
	// Increase is the fraction added back per success; default 0.05.
	Increase float64 `yaml:"increase"`
	// Every is the least time between two changes in one direction;
	// default 1s.
	Every Duration `yaml:"every"`
}

func (r BudgetRate) rate() budget.Rate {
	return budget.Rate{Quota: r.Quota, Window: r.Window.D(), Burst: r.Burst}
}

func (l BudgetLimits) limits() budget.Limits {
	out := budget.Limits{InFlight: l.InFlight}
	if l.Requests != nil {
		out.Requests = l.Requests.rate()
		if out.Requests.IsZero() { // written but empty: let Validate say so
			out.Requests.Window = -1
		}
	}
	if l.Units != nil {
		out.Units = make(map[string]budget.Rate, len(l.Units))
		for u, r := range l.Units {
			out.Units[u] = r.rate()
		}
	}
	return out
}

// Config returns the definition as package budget takes it.
func (d BudgetDef) Config() budget.Config {
	return budget.Config{
		Limits:    d.BudgetLimits.limits(),
		PerTenant: d.PerTenant.limits(),
		Share:     budget.Share{Floor: d.Share.Floor, Ceiling: d.Share.Ceiling, Reserve: d.Share.Reserve},
		Adaptive: budget.Adaptive{Min: d.Adaptive.Min, Decrease: d.Adaptive.Decrease,
			Increase: d.Adaptive.Increase, Every: d.Adaptive.Every.D()},
		LeaseTTL: d.Lease.D(),
	}
}

// BudgetConfigs returns every budget of the file as package budget takes
// them: what budget.Budgets.Replace applies at start and at each reload.
func (c *Config) BudgetConfigs() map[string]budget.Config {
	out := make(map[string]budget.Config, len(c.Budgets.Definitions))
	for name, d := range c.Budgets.Definitions {
		out[name] = d.Config()
	}
	return out
}

// DefaultClaim returns the costs a job of queue and kind claims when it
// names no budgets itself: the queue's claims, with the kind's replacing
// them budget by budget. It returns nil when neither names a budget.
func (b Budgets) DefaultClaim(queue, kind string) map[string]budget.Cost {
	var out map[string]budget.Cost
	for _, src := range []map[string]map[string]int64{b.QueueClaims[queue], b.KindClaims[kind]} {
		for name, cost := range src {
			if out == nil {
				out = map[string]budget.Cost{}
			}
			c := make(budget.Cost, len(cost))
			for u, n := range cost {
				c[u] = n
			}
			out[name] = c
		}
	}
	return out
}

// budgets checks every definition by package budget's rules, naming the
// file's keys, and every default claim against the definitions.
func (v *validator) budgets(b *Budgets) {
	base := []any{"budgets", "definitions"}
	for _, name := range sortedKeys(b.Definitions) {
		if err := budget.ValidName(name); err != nil {
			v.add(p(base, name), "budget name %q must start with a letter or digit and hold only letters, digits, '.', '_' and '-' (at most 128)", name)
			continue
		}
		err := b.Definitions[name].Config().Validate()
		var ce *budget.ConfigError
		if errors.As(err, &ce) {
			v.add(p(base, append([]any{name}, budgetPath(ce.Field)...)...), "%s", fileWords(ce.Rule))
		}
	}
	for _, claims := range []struct {
		key string
		m   map[string]map[string]map[string]int64
	}{{"queue_claims", b.QueueClaims}, {"kind_claims", b.KindClaims}} {
		for _, owner := range sortedKeys(claims.m) {
			v.name([]any{"budgets", claims.key, owner}, strings.TrimSuffix(claims.key, "_claims"), owner)
			for _, name := range sortedKeys(claims.m[owner]) {
				v.claim([]any{"budgets", claims.key, owner, name}, b, name, claims.m[owner][name])
			}
		}
	}
}

// claim checks one default claim: a defined budget, known units, costs
// not negative.
func (v *validator) claim(path []any, b *Budgets, name string, cost map[string]int64) {
	def, ok := b.Definitions[name]
	if !ok {
		v.add(path, "names budget %q, which budgets.definitions does not define", name)
		return
	}
	units := budgetUnits(def)
	for _, u := range sortedKeys(cost) {
		switch {
		case cost[u] < 0:
			v.add(p(path, u), "must not be negative, got %d", cost[u])
		case !slices.Contains(units, u):
			v.add(p(path, u), "budget %q limits no unit %q; its units are %s", name, u, strings.Join(units, ", "))
		}
	}
}

// budgetUnits lists the units a definition limits in any scope, sorted;
// "requests" is always one: every claim spends a request.
func budgetUnits(d BudgetDef) []string {
	set := map[string]bool{budget.Requests: true}
	for _, l := range []BudgetLimits{d.BudgetLimits, d.PerTenant} {
		for u := range l.Units {
			set[u] = true
		}
	}
	out := make([]string, 0, len(set))
	for u := range set {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

// budgetFields maps package budget's field names to the file's keys.
var budgetFields = map[string]string{
	"Limits": "", "PerTenant": "per_tenant", "Requests": "requests", "Units": "units",
	"InFlight": "in_flight", "Quota": "quota", "Window": "window", "Burst": "burst",
	"Share": "share", "Floor": "floor", "Ceiling": "ceiling", "Reserve": "reserve", "LeaseTTL": "lease",
	"Adaptive": "adaptive", "Min": "min", "Decrease": "decrease", "Increase": "increase", "Every": "every",
}

// budgetPath turns a budget.ConfigError field, such as
// "Limits.Units[tokens].Quota", into the file's path segments, such as
// [units tokens quota] (the total limits sit at the definition's top).
func budgetPath(field string) []any {
	var out []any
	for _, part := range strings.Split(field, ".") {
		name, key, _ := strings.Cut(part, "[")
		if k, ok := budgetFields[name]; ok && k != "" {
			out = append(out, k)
		} else if !ok {
			out = append(out, name)
		}
		if key != "" {
			out = append(out, strings.TrimSuffix(key, "]"))
		}
	}
	return out
}

// fileWords rewrites the Go field names a rule may mention in the file's
// words.
func fileWords(rule string) string {
	return strings.NewReplacer("Share.Floor", "share.floor", "Limits.Requests", "requests",
		"Limits or PerTenant", "the budget or per_tenant", "total Limits", "total limits").Replace(rule)
}
