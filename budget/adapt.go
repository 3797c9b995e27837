package budget

import (
	"math"
	"time"
)

// Defaults of Adaptive.
const (
	DefaultAdaptDecrease = 0.5
	DefaultAdaptIncrease = 0.05
	DefaultAdaptEvery    = time.Second
)

// Adaptive lets a budget's total rates follow what the upstream accepts,
// within the configured bounds (AIMD): each refusal (a 429 seen by Learn
// or Transport) multiplies the rates by Decrease, down to Min of the
// configured rates; each success adds Increase of the configured rates
// back, up to the configured rates. Only the rates' refill speed adapts:
// bursts, in-flight maximums and per-tenant limits stay as configured.
//
// The factor is kept in each process, not in the store: every process
// slows down on the refusals it sees and charges its claims at its own
// rate on the shared counters, so a fleet slows down as its processes
// meet refusals. (A refusal also closes the budget for the whole fleet
// until the upstream's reset; see Learn.) The zero value turns adaptation
// off.
type Adaptive struct {
	// Min is the least fraction of the configured rates the budget falls
	// to, in (0, 1]. 0 turns adaptation off.
	Min float64
	// Decrease multiplies the rates on a refusal, in (0, 1). 0 means
	// DefaultAdaptDecrease (0.5).
	Decrease float64
	// Increase is the fraction of the configured rates a success adds
	// back, in (0, 1]. 0 means DefaultAdaptIncrease (0.05).
	Increase float64
	// Every is the least time between two changes in the same direction,
	// so that a burst of refusals halves the rates once and a stream of
	// successes raises them at most once per Every. 0 means
	// DefaultAdaptEvery (1s).
	Every time.Duration
}

func (a Adaptive) on() bool { return a.Min > 0 }

func (a Adaptive) withDefaults() Adaptive {
	if a.Decrease == 0 {
		a.Decrease = DefaultAdaptDecrease
	}
	if a.Increase == 0 {
		a.Increase = DefaultAdaptIncrease
	}
	if a.Every == 0 {
		a.Every = DefaultAdaptEvery
	}
	return a
}

// Validate returns an error naming the field and the rule when a cannot
// be used.
func (a Adaptive) Validate() error {
	bad := func(v float64) bool { return math.IsNaN(v) || v < 0 || v > 1 }
	switch {
	case bad(a.Min):
		return invalid("Adaptive.Min", "must be a fraction in (0, 1], got %v", a.Min)
	case bad(a.Decrease) || a.Decrease == 1:
		return invalid("Adaptive.Decrease", "must be a fraction in (0, 1), got %v", a.Decrease)
	case bad(a.Increase):
		return invalid("Adaptive.Increase", "must be a fraction in (0, 1], got %v", a.Increase)
	case a.Every < 0:
		return invalid("Adaptive.Every", "must not be negative, got %s", a.Every)
	case !a.on() && (a.Decrease != 0 || a.Increase != 0 || a.Every != 0):
		return invalid("Adaptive.Min", "must be set to turn adaptation on")
	}
	return nil
}

// aimd is one budget's adaptation state in this process.
type aimd struct {
	factor     float64
	up, down   time.Time // when the factor last rose and fell
	configured bool
}

// Adapt reports one outcome of a call to the budget name's upstream —
// limited (refused for being over its limits) or not — and returns the
// fraction of the configured rates now in effect. On a budget without
// Adaptive it changes nothing and returns 1.
func (b *Budgets) Adapt(name string, limited bool) (float64, error) {
	cfgs, err := b.lookup([]string{name})
	if err != nil {
		return 0, err
	}
	a := cfgs[0].Adaptive
	if !a.on() {
		return 1, nil
	}
	a = a.withDefaults()
	now := b.clock.Now()
	b.amu.Lock()
	defer b.amu.Unlock()
	st := b.adaptState(name)
	switch {
	case limited && now.Sub(st.down) >= a.Every:
		st.factor = max(a.Min, st.factor*a.Decrease)
		st.down = now
	case !limited && st.factor < 1 && now.Sub(st.up) >= a.Every && now.Sub(st.down) >= a.Every:
		st.factor = min(1, st.factor+a.Increase)
		st.up = now
	}
	return st.factor, nil
}

// Factor returns the fraction of the budget name's configured rates in
// effect in this process: 1 unless Adaptive has slowed it down.
func (b *Budgets) Factor(name string) float64 {
	b.amu.Lock()
	defer b.amu.Unlock()
	if st, ok := b.adapt[name]; ok {
		return st.factor
	}
	return 1
}

// adaptState returns name's state, making it on first use. b.amu must be
// held.
func (b *Budgets) adaptState(name string) *aimd {
	st, ok := b.adapt[name]
	if !ok {
		if b.adapt == nil {
			b.adapt = map[string]*aimd{}
		}
		st = &aimd{factor: 1}
		b.adapt[name] = st
	}
	return st
}

// effective returns cfg with its total rates slowed by the budget's
// factor: the quota (the refill speed) scales, the burst stays, so a
// claim that fits the configured budget still fits, later.
func (b *Budgets) effective(name string, cfg Config) Config {
	f := b.Factor(name)
	if f >= 1 || !cfg.Adaptive.on() {
		return cfg
	}
	slow := func(r Rate) Rate {
		if r.IsZero() {
			return r
		}
		return Rate{Quota: max(1, int64(math.Ceil(float64(r.Quota)*f))), Window: r.Window, Burst: r.Capacity()}
	}
	cfg.Limits.Requests = slow(cfg.Limits.Requests)
	if len(cfg.Limits.Units) > 0 {
		units := make(map[string]Rate, len(cfg.Limits.Units))
		for u, r := range cfg.Limits.Units {
			units[u] = slow(r)
		}
		cfg.Limits.Units = units
	}
	return cfg
}
