package config

import (
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// InFlight limits calls running at once.
type InFlight struct {
	// Max is how many leases may be held at once. Required, positive.
	Max int64 `yaml:"max"`
	// TTL is how long a lease lasts unless released; default 1m.
	TTL Duration `yaml:"ttl"`
}

// DefaultLeaseTTL is an in-flight lease's TTL when InFlight.TTL is 0.
const DefaultLeaseTTL = time.Minute

// Limit returns f as a ratelimit.InFlight, with the default TTL filled in.
func (f InFlight) Limit() ratelimit.InFlight {
	ttl := f.TTL.D()
	if ttl == 0 {
		ttl = DefaultLeaseTTL
	}
	return ratelimit.InFlight{Max: f.Max, TTL: ttl}
}

// Override replaces a policy's limits for one subject (or the whole
// policy when Subject is empty).
type Override struct {
	// Scene and Policy name the policy. Required.
	Scene  string `yaml:"scene"`
	Policy string `yaml:"policy"`
	// Subject maps each of the scene's subject fields to a value, such as
	// {team: acme}; empty overrides every subject of the policy.
	Subject map[string]string `yaml:"subject"`
	// Limits replace the policy's limits.
	Limits []Limit `yaml:"limits"`
	// InFlight replaces the policy's in-flight limit.
	InFlight *InFlight `yaml:"in_flight"`
	// Unlimited admits every call without counting.
	Unlimited bool `yaml:"unlimited"`
}

// Ratelimit returns o as a ratelimit.Override, its subject in the scene's
// field order.
func (o Override) Ratelimit(fields []string) ratelimit.Override {
	out := ratelimit.Override{Scene: o.Scene, Policy: o.Policy, Unlimited: o.Unlimited}
	if len(o.Subject) > 0 {
		for _, f := range fields {
			out.Subject = append(out.Subject, f, o.Subject[f])
		}
	}
	for _, l := range o.Limits {
		out.Limits = append(out.Limits, l.Limit())
	}
	if o.InFlight != nil {
		f := o.InFlight.Limit()
		out.InFlight = &f
	}
	return out
}

func (v *validator) inFlight(base []any, f *InFlight) {
	if f == nil {
		return
	}
	if f.Max <= 0 {
		v.add(p(base, "max"), "must be a positive integer, got %d", f.Max)
	}
	if ttl := f.TTL.D(); ttl < 0 || ttl%time.Millisecond != 0 {
		v.add(p(base, "ttl"), "must be a positive whole number of milliseconds, got %s", ttl)
	}
}

func (v *validator) policyExtras(base []any, pol Policy) {
	v.inFlight(p(base, "in_flight"), pol.InFlight)
	if pol.Unlimited && (len(pol.Limits) > 0 || pol.InFlight != nil) {
		v.add(p(base, "unlimited"), "must not be set together with limits or in_flight")
	}
}

func (v *validator) overrides(l *Limits) {
	if l.OverrideTTL < 0 {
		v.add([]any{"limits", "override_ttl"}, "must not be negative, got %s", l.OverrideTTL)
	}
	seen := map[string]int{}
	for i, o := range l.Overrides {
		base := []any{"limits", "overrides", i}
		sc, ok := l.Scenes[o.Scene]
		if !ok {
			v.add(p(base, "scene"), "unknown scene %q", o.Scene)
			continue
		}
		if _, ok := sc.Policies[o.Policy]; !ok {
			v.add(p(base, "policy"), "unknown policy %q in scene %q", o.Policy, o.Scene)
		}
		v.overrideSubject(base, sc, o)
		v.limitList(p(base, "limits"), o.Limits)
		v.inFlight(p(base, "in_flight"), o.InFlight)
		switch {
		case o.Unlimited && (len(o.Limits) > 0 || o.InFlight != nil):
			v.add(p(base, "unlimited"), "must not be set together with limits or in_flight")
		case !o.Unlimited && len(o.Limits) == 0 && o.InFlight == nil:
			v.add(base, "must set limits, in_flight or unlimited")
		}
		id := o.Ratelimit(sc.Subject).ID()
		if j, dup := seen[id]; dup {
			v.add(base, "overrides the same subject as overrides[%d]", j)
		}
		seen[id] = i
	}
	v.envoyReplaces(l)
}

func (v *validator) overrideSubject(base []any, sc Scene, o Override) {
	if len(o.Subject) == 0 {
		return
	}
	for _, f := range sc.Subject {
		if o.Subject[f] == "" {
			v.add(p(base, "subject", f), "is required: scene %q's subject fields are %v", o.Scene, sc.Subject)
		}
	}
	for f := range o.Subject {
		found := false
		for _, g := range sc.Subject {
			found = found || f == g
		}
		if !found {
			v.add(p(base, "subject", f), "scene %q has no subject field %q", o.Scene, f)
		}
	}
}

func (v *validator) envoyReplaces(l *Limits) {
	names := map[string]bool{}
	for _, r := range l.Envoy {
		if r.Name != "" {
			names[r.Name] = true
		}
	}
	for i, r := range l.Envoy {
		for j, name := range r.Replaces {
			if !names[name] {
				v.add([]any{"limits", "envoy", i, "replaces", j}, "no envoy rule is named %q", name)
			}
		}
	}
}
