package config

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/ratelimit"
	"gopkg.in/yaml.v3"
)

// NamePattern is what scene, policy and subject field names must match:
// they appear in URLs and keys.
var NamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// validator checks a decoded Config and finds each problem's line in the
// document.
type validator struct {
	root     *yaml.Node
	problems []Problem
}

// add records a problem at the field named by segs (strings are mapping
// keys, ints are list indexes).
func (v *validator) add(segs []any, format string, args ...any) {
	v.problems = append(v.problems, Problem{Line: v.line(segs), Path: render(segs), Message: fmt.Sprintf(format, args...)})
}

// line finds the deepest node on segs; a missing field reports its parent.
// Without a document (Validate) there are no lines.
func (v *validator) line(segs []any) int {
	if v.root == nil {
		return 0
	}
	n, line := v.root, v.root.Line
	for _, s := range segs {
		var next *yaml.Node
		switch s := s.(type) {
		case string:
			if n.Kind != yaml.MappingNode {
				return line
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == s {
					line, next = n.Content[i].Line, n.Content[i+1]
					break
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && s < len(n.Content) {
				next = n.Content[s]
				line = next.Line
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}

func render(segs []any) string {
	var b strings.Builder
	for _, s := range segs {
		switch s := s.(type) {
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s)
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		}
	}
	return b.String()
}

// p appends to a path without aliasing the caller's slice.
func p(base []any, more ...any) []any {
	return append(slices.Clip(base), more...)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Validate checks c, such as a Config changed after loading (command-line
// overrides), filling defaults first. Problems carry no line.
func (c *Config) Validate() error {
	c.applyDefaults()
	v := validator{}
	v.config(c)
	if len(v.problems) == 0 {
		return nil
	}
	return &Error{Problems: v.problems}
}

func (v *validator) config(c *Config) {
	v.server(&c.Server)
	v.storage(&c.Storage)
	v.auth(&c.Auth)
	v.limits(&c.Limits)
	v.queues(&c.Queues)
	v.placement(c)
	v.webhooks(&c.Webhooks)
	v.metrics(&c.Metrics)
	v.storageTuning(&c.Storage)
	v.webhookDelivery(c.Webhooks.Delivery)
	v.schedules(c.Schedules)
	v.telemetry(&c.Telemetry)
	v.budgets(&c.Budgets) // budgets.go
}

func (v *validator) server(s *Server) {
	base := []any{"server"}
	v.hostPort(p(base, "listen"), s.Listen)
	if s.GRPC != "" {
		v.hostPort(p(base, "grpc"), s.GRPC)
	}
	if s.LogFormat != "text" && s.LogFormat != "json" {
		v.add(p(base, "log_format"), `must be "text" or "json", got %q`, s.LogFormat)
	}
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, s.LogLevel) {
		v.add(p(base, "log_level"), `must be "debug", "info", "warn" or "error", got %q`, s.LogLevel)
	}
	v.nonNegative(p(base, "max_body_bytes"), s.MaxBodyBytes)
	v.nonNegativeDuration(p(base, "shutdown_timeout"), s.ShutdownTimeout)
}

func (v *validator) hostPort(path []any, addr string) {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		if n, perr := strconv.Atoi(port); perr != nil || n < 0 || n > 65535 {
			err = fmt.Errorf("bad port")
		}
	}
	if err != nil {
		v.add(path, "must be host:port such as 127.0.0.1:8080, got %q", addr)
	}
}

func (v *validator) nonNegative(path []any, n int64) {
	if n < 0 {
		v.add(path, "must not be negative, got %d", n)
	}
}

func (v *validator) atLeastUnlimited(path []any, n int64) {
	if n < -1 {
		v.add(path, "must be -1 (unlimited), 0 (default) or positive, got %d", n)
	}
}

func (v *validator) nonNegativeDuration(path []any, d Duration) {
	if d < 0 {
		v.add(path, "must not be negative, got %s", d)
	}
}

func (v *validator) storage(s *Storage) {
	if !slices.Contains([]string{"single", "cluster", "sentinel"}, s.RedisMode) {
		v.add([]any{"storage", "redis_mode"}, `must be "single", "cluster" or "sentinel", got %q`, s.RedisMode)
		return
	}
	if s.RedisURL != "" {
		if _, err := redisOptions(*s); err != nil {
			// The URL may hold a password: say what is wrong, never echo it.
			v.add([]any{"storage", "redis_url"}, "must be a redis:// or rediss:// URL such as redis://127.0.0.1:6379/0 (%s mode)", s.RedisMode)
		}
	}
	v.postgres(s)
	if err := keyspace.Prefix(s.Prefix).Validate(); err != nil {
		v.add([]any{"storage", "prefix"}, `must be a namespace followed by ':' such as "sluice:" or "team-a:jobs:", got %q`, s.Prefix)
	}
}

func (v *validator) auth(a *Auth) {
	names, secrets := map[string]int{}, map[string]int{}
	for i, t := range a.Tokens {
		base := []any{"auth", "tokens", i}
		switch j, dup := names[t.Name]; {
		case t.Name == "":
			v.add(p(base, "name"), "is required")
		case dup:
			v.add(p(base, "name"), "duplicate name %q (also tokens[%d])", t.Name, j)
		default:
			names[t.Name] = i
		}
		switch j, dup := secrets[t.Token]; {
		case t.Token == "":
			v.add(p(base, "token"), "is required (write it as ${ENV_VAR})")
		case len(t.Token) < 16:
			v.add(p(base, "token"), "must be at least 16 characters, got %d", len(t.Token))
		case dup:
			v.add(p(base, "token"), "same secret as tokens[%d]", j)
		default:
			secrets[t.Token] = i
		}
		if len(t.Roles) == 0 {
			v.add(p(base, "roles"), "must name at least one role (admin, producer, worker, limiter)")
		}
		for k, r := range t.Roles {
			if !slices.Contains(Roles, r) {
				v.add(p(base, "roles", k), "unknown role %q (known: admin, producer, worker, limiter)", r)
			}
		}
	}
}

func (v *validator) limits(l *Limits) {
	if l.Timeout < 0 {
		v.add([]any{"limits", "timeout"}, "must not be negative, got %s", l.Timeout)
	}
	for _, name := range sortedKeys(l.Scenes) {
		v.scene([]any{"limits", "scenes", name}, name, l.Scenes[name])
	}
	v.envoy(l)
	v.overrides(l) // overrides.go
}

func (v *validator) name(path []any, what, name string) {
	if !NamePattern.MatchString(name) {
		v.add(path, "%s name %q must start with a letter or digit and hold only letters, digits, '.', '_' and '-'", what, name)
	}
}

func (v *validator) failureMode(path []any, mode string, optional bool) {
	if mode == "open" || mode == "closed" || (optional && mode == "") {
		return
	}
	v.add(path, `must be "open" or "closed", got %q`, mode)
}

func (v *validator) scene(base []any, name string, s Scene) {
	v.name(base, "scene", name)
	if len(s.Subject) == 0 {
		v.add(p(base, "subject"), "must name at least one subject field, such as [member]")
	}
	seen := map[string]int{}
	for i, f := range s.Subject {
		v.name(p(base, "subject", i), "subject field", f)
		if j, dup := seen[f]; dup {
			v.add(p(base, "subject", i), "duplicate subject field %q (also subject[%d])", f, j)
		}
		seen[f] = i
	}
	v.failureMode(p(base, "failure_mode"), s.FailureMode, true)
	if len(s.Policies) == 0 {
		v.add(p(base, "policies"), "must define at least one policy")
	}
	for _, pn := range sortedKeys(s.Policies) {
		v.policy(p(base, "policies", pn), pn, s.Policies[pn])
	}
}

func (v *validator) policy(base []any, name string, pol Policy) {
	v.name(base, "policy", name)
	v.failureMode(p(base, "failure_mode"), pol.FailureMode, true)
	if len(pol.Limits) == 0 && !pol.Unlimited && pol.InFlight == nil {
		v.add(p(base, "limits"), "must hold at least one limit, such as {quota: 10, window: 60s}")
	}
	v.policyExtras(base, pol) // overrides.go
	v.limitList(p(base, "limits"), pol.Limits)
}

// limitList checks each limit at base[i], and that no two share a counter.
func (v *validator) limitList(base []any, ls []Limit) {
	ids := map[string]int{}
	for i, l := range ls {
		lim, ok := v.limit(p(base, i), l)
		if !ok {
			continue
		}
		if j, dup := ids[lim.ID()]; dup {
			v.add(p(base, i), "has the same algorithm and window as limits[%d]: they would share one counter", j)
		}
		ids[lim.ID()] = i
	}
}

// LimitsProblems checks limits by the rules of the file's limits (a
// policy's or an override's), for callers that take limits from elsewhere,
// such as the API's overrides: one rule for both. Each problem's Path is
// "limits[i].field" and its Line 0.
func LimitsProblems(ls []Limit) []Problem {
	v := validator{}
	v.limitList([]any{"limits"}, ls)
	return v.problems
}

// limit checks one limit and returns it as a ratelimit.Limit.
func (v *validator) limit(base []any, l Limit) (ratelimit.Limit, bool) {
	n := len(v.problems)
	if l.Quota <= 0 {
		v.add(p(base, "quota"), "must be a positive integer, got %d", l.Quota)
	}
	switch w := l.Window.D(); {
	case w <= 0:
		v.add(p(base, "window"), "is required: a duration such as 1s, 60s or 1h")
	case w < time.Millisecond || w%time.Millisecond != 0:
		v.add(p(base, "window"), "must be a whole number of milliseconds, got %s", w)
	}
	alg, err := ratelimit.ParseAlgorithm(l.Algorithm)
	if err != nil {
		v.add(p(base, "algorithm"), `must be "fixed-window", "sliding-window" or "token-bucket", got %q`, l.Algorithm)
	}
	switch {
	case l.Burst < 0:
		v.add(p(base, "burst"), "must not be negative, got %d", l.Burst)
	case l.Burst > 0 && err == nil && alg != ratelimit.TokenBucket:
		v.add(p(base, "burst"), "only applies to algorithm token-bucket")
	}
	return l.Limit(), len(v.problems) == n
}

// RedisClient builds the client s names (without connecting): a single
// server, a Cluster or a Sentinel-managed primary, by s.RedisMode. Close
// it when done.
//
// Unless the URL sets max_retries, go-redis's command retries are off: it
// retries a command whose reply timed out, and a decision or enqueue script
// run twice counts twice or stores its jobs twice. The callers' own failure
// modes and the worker's outcome retries handle a failed call instead.
func RedisClient(s Storage) (redis.UniversalClient, error) {
	o, err := redisOptions(s)
	if err != nil {
		return nil, err
	}
	noRetries := !strings.Contains(s.RedisURL, "max_retries=")
	switch o := o.(type) {
	case *redis.ClusterOptions:
		if noRetries {
			o.MaxRetries = -1
		}
		return redis.NewClusterClient(o), nil
	case *redis.FailoverOptions:
		if noRetries {
			o.MaxRetries = -1
		}
		return redis.NewFailoverClient(o), nil
	default:
		so := o.(*redis.Options)
		if noRetries {
			so.MaxRetries = -1
		}
		return redis.NewClient(so), nil
	}
}

// redisOptions parses the URL by mode, creating nothing.
func redisOptions(s Storage) (any, error) {
	switch s.RedisMode {
	case "cluster":
		return redis.ParseClusterURL(s.RedisURL)
	case "sentinel":
		return redis.ParseFailoverURL(s.RedisURL)
	}
	return redis.ParseURL(s.RedisURL)
}

// Limit converts l; call it on a validated Config.
func (l Limit) Limit() ratelimit.Limit {
	alg, _ := ratelimit.ParseAlgorithm(l.Algorithm)
	return ratelimit.Limit{Quota: l.Quota, Window: l.Window.D(), Algorithm: alg, Burst: l.Burst}
}

func (v *validator) queues(q *Queues) {
	base := []any{"queues"}
	v.nonNegativeDuration(p(base, "lease"), q.Lease)
	v.nonNegative(p(base, "max_payload_bytes"), q.MaxPayloadBytes)
	v.nonNegative(p(base, "max_depth"), q.MaxDepth)
	v.nonNegativeDuration(p(base, "events", "retention"), q.Events.Retention)
	v.nonNegative(p(base, "events", "max_events"), int64(q.Events.MaxEvents))
	v.tenantLimit(p(base, "tenants", "default"), q.Tenants.Default)
	for _, id := range sortedKeys(q.Tenants.Overrides) {
		v.tenantLimit(p(base, "tenants", "overrides", id), q.Tenants.Overrides[id])
	}
	v.queueSettings(q)
	v.priority(q.Priority)
	v.overload(q.Overload)
}

func (v *validator) tenantLimit(base []any, t TenantLimit) {
	v.atLeastUnlimited(p(base, "concurrency"), int64(t.Concurrency))
	switch {
	case t.Weight < 0 || t.Weight > 1000:
		v.add(p(base, "weight"), "must be from 0 (default) to 1000, got %d", t.Weight)
	}
	v.atLeastUnlimited(p(base, "backlog_cap"), t.BacklogCap)
	v.nonNegativeDuration(p(base, "max_wait"), t.MaxWait)
}

func (v *validator) webhooks(w *Webhooks) {
	v.jobWebhooks(&w.Jobs)
	for i, n := range w.AllowNetworks {
		if _, err := parsePrefix(n); err != nil {
			v.add([]any{"webhooks", "allow_networks", i}, "must be an address or a prefix such as 10.20.0.0/16, got %q", n)
		}
	}
	names := map[string]int{}
	for i, s := range w.Subscriptions {
		base := []any{"webhooks", "subscriptions", i}
		switch j, dup := names[s.Name]; {
		case s.Name == "":
			v.add(p(base, "name"), "is required")
		case dup:
			v.add(p(base, "name"), "duplicate name %q (also subscriptions[%d])", s.Name, j)
		default:
			names[s.Name] = i
		}
		u, err := url.Parse(s.URL)
		if s.URL == "" {
			v.add(p(base, "url"), "is required")
		} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.add(p(base, "url"), "must be an absolute http or https URL")
		}
		for k, e := range s.Events {
			if !slices.Contains(WebhookEvents, e) {
				v.add(p(base, "events", k), "unknown event %q (known: %s)", e, strings.Join(WebhookEvents, ", "))
			}
		}
	}
}
