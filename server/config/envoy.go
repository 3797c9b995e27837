package config

import (
	"slices"
	"strings"
)

func (v *validator) envoy(l *Limits) {
	signatures := map[string]int{}
	for i, r := range l.Envoy {
		base := []any{"limits", "envoy", i}
		if r.Domain == "" {
			v.add(p(base, "domain"), "is required")
		}
		scene, ok := l.Scenes[r.Scene]
		switch {
		case r.Scene == "":
			v.add(p(base, "scene"), "is required")
		case !ok:
			v.add(p(base, "scene"), "unknown scene %q", r.Scene)
		}
		v.envoyPolicy(base, r, scene, ok)
		v.envoyEntries(base, r, scene, ok)
		sig := r.signature()
		if j, dup := signatures[sig]; dup {
			v.add(base, "matches the same descriptors as envoy[%d]", j)
		}
		signatures[sig] = i
	}
}

func (v *validator) envoyPolicy(base []any, r EnvoyRule, scene Scene, sceneOK bool) {
	switch {
	case r.Policy == "" && r.PolicyKey == "":
		v.add(base, "must set policy or policy_key")
	case r.Policy != "" && r.PolicyKey != "":
		v.add(p(base, "policy_key"), "must not be set together with policy")
	case r.Policy != "":
		if _, ok := scene.Policies[r.Policy]; sceneOK && !ok {
			v.add(p(base, "policy"), "unknown policy %q in scene %q", r.Policy, r.Scene)
		}
	default:
		i := slices.IndexFunc(r.Entries, func(e EnvoyEntry) bool { return e.Key == r.PolicyKey })
		if i < 0 {
			v.add(p(base, "policy_key"), "must name one of the entries' keys, got %q", r.PolicyKey)
		} else if r.Entries[i].Value != "" || r.Entries[i].Subject != "" {
			v.add(p(base, "entries", i), "is the policy_key entry: it must have neither value nor subject")
		}
	}
}

func (v *validator) envoyEntries(base []any, r EnvoyRule, scene Scene, sceneOK bool) {
	if len(r.Entries) == 0 {
		v.add(p(base, "entries"), "must hold at least one entry")
	}
	keys, covered := map[string]int{}, map[string]bool{}
	for i, e := range r.Entries {
		eb := p(base, "entries", i)
		if e.Key == "" {
			v.add(p(eb, "key"), "is required")
		} else if j, dup := keys[e.Key]; dup {
			v.add(p(eb, "key"), "duplicate key %q (also entries[%d])", e.Key, j)
		}
		keys[e.Key] = i
		if e.Value != "" && e.Subject != "" {
			v.add(p(eb, "subject"), "must not be set together with value")
		}
		if e.Subject != "" && sceneOK {
			if !slices.Contains(scene.Subject, e.Subject) {
				v.add(p(eb, "subject"), "scene %q has no subject field %q (fields: %s)", r.Scene, e.Subject, strings.Join(scene.Subject, ", "))
			} else if covered[e.Subject] {
				v.add(p(eb, "subject"), "subject field %q is already taken by another entry", e.Subject)
			}
			covered[e.Subject] = true
		}
	}
	if !sceneOK || len(r.Entries) == 0 {
		return
	}
	for _, f := range scene.Subject {
		if !covered[f] {
			v.add(p(base, "entries"), "no entry gives subject field %q of scene %q", f, r.Scene)
		}
	}
}

// signature identifies which descriptors a rule matches: two rules with
// the same one would be ambiguous.
func (r EnvoyRule) signature() string {
	var b strings.Builder
	b.WriteString(r.Domain)
	for _, e := range r.Entries {
		b.WriteString("\x00" + e.Key + "\x01" + e.Value)
	}
	return b.String()
}
