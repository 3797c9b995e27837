// Package config is the model and loader of sluice.yaml, the file that
// drives `sluice serve`: storage, rate-limit scenes, queues, webhooks, auth
// tokens and the listeners.
//
// Parsing is strict: an unknown field is an error, and every problem is
// reported with its line, not just the first. Scalar values may name
// environment variables as ${NAME} or ${NAME:-default}, so secrets stay out
// of the file. Every field's zero value means its default, written in its
// doc comment; Default returns a Config with no scenes and no tokens.
package config

import (
	"net/netip"
	"time"
)

// Config is the whole sluice.yaml.
type Config struct {
	// Server configures the listeners and logging.
	Server Server `yaml:"server"`
	// Storage chooses where counters and jobs live: embedded (default) or
	// Redis.
	Storage Storage `yaml:"storage"`
	// Auth holds the bearer tokens. No tokens: see Auth.
	Auth Auth `yaml:"auth"`
	// Limits holds the rate-limit scenes and the Envoy mapping.
	Limits Limits `yaml:"limits"`
	// Queues configures the job queue.
	Queues Queues `yaml:"queues"`
	// Webhooks holds the webhook subscriptions.
	Webhooks Webhooks `yaml:"webhooks"`
	// Metrics protects GET /metrics and bounds its tenant label.
	Metrics Metrics `yaml:"metrics"`
	// Schedules are recurring jobs (see Schedule); hot-reloaded.
	Schedules []Schedule `yaml:"schedules"`
	// Telemetry configures tracing with OpenTelemetry; off by default.
	Telemetry Telemetry `yaml:"telemetry"`
	// Budgets are the shared upstream budgets jobs spend and the claims
	// jobs make by default (see Budgets); hot-reloaded.
	Budgets Budgets `yaml:"budgets"`
}

// Server configures the listeners and logging.
type Server struct {
	// Listen is the HTTP address; default "127.0.0.1:8080".
	Listen string `yaml:"listen"`
	// GRPC is the address of the Envoy rate-limit gRPC service; empty
	// (the default) leaves it off.
	GRPC string `yaml:"grpc"`
	// LogFormat is "text" (default) or "json".
	LogFormat string `yaml:"log_format"`
	// LogLevel is "debug", "info" (default), "warn" or "error".
	LogLevel string `yaml:"log_level"`
	// MaxBodyBytes bounds a request body; default 1 MiB (DefaultMaxBodyBytes).
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// ShutdownTimeout bounds a graceful shutdown; default 30s.
	ShutdownTimeout Duration `yaml:"shutdown_timeout"`
}

// Defaults of Server.
const (
	DefaultListen          = "127.0.0.1:8080"
	DefaultMaxBodyBytes    = 1 << 20
	DefaultShutdownTimeout = 30 * time.Second
)

// Storage chooses where counters and jobs live.
type Storage struct {
	// DataDir holds the embedded job store (SQLite); default
	// "./sluice-data", created on first run. Unused with RedisURL.
	DataDir string `yaml:"data_dir"`
	// RedisURL, when set, moves counters and jobs to Redis, such as
	// "redis://127.0.0.1:6379/0" or "rediss://:${REDIS_PASSWORD}@host:6380".
	RedisURL string `yaml:"redis_url"`
	// PostgresURL, when set, keeps jobs in PostgreSQL (queue/pgqueue),
	// such as "postgres://sluice:${PG_PASSWORD}@db:5432/app"; counters stay
	// in memory unless RedisURL is set too, and with RedisURL jobs stay on
	// Redis unless queues.default_backend or queues.backends name
	// "postgres".
	PostgresURL string `yaml:"postgres_url"`
	// Postgres tunes the Postgres job store (storage_postgres.go).
	Postgres PostgresTuning `yaml:"postgres"`
	// RedisMode says how to read RedisURL: "single" (default, one
	// server), "cluster" (Redis Cluster; more seed nodes as ?addr=host:port)
	// or "sentinel" (?master_name=NAME, sentinels as host and ?addr=).
	RedisMode string `yaml:"redis_mode"`
	// Prefix is the Redis key prefix; default "sluice:".
	Prefix string `yaml:"prefix"`
	// SQLite, RedisQueue, RedisLimits, RedisBreaker and MemoryLimits tune
	// each store (storage_tuning.go); zero values are the library
	// defaults. Read at start, like the rest of storage.
	SQLite       SQLiteTuning       `yaml:"sqlite"`
	RedisQueue   RedisQueueTuning   `yaml:"redis_queue"`
	RedisLimits  RedisLimitsTuning  `yaml:"redis_limits"`
	RedisBreaker RedisBreaker       `yaml:"redis_breaker"`
	MemoryLimits MemoryLimitsTuning `yaml:"memory_limits"`
}

// DefaultDataDir is Storage.DataDir's default.
const DefaultDataDir = "./sluice-data"

// Role names what a token may do.
type Role string

// The roles. Admin may do everything.
const (
	RoleAdmin    Role = "admin"    // everything, including tenant limits
	RoleProducer Role = "producer" // enqueue, read and cancel jobs; queue stats
	RoleWorker   Role = "worker"   // lease, heartbeat, complete and fail jobs
	RoleLimiter  Role = "limiter"  // rate-limit decisions
)

// Roles lists every role in a stable order.
var Roles = []Role{RoleAdmin, RoleProducer, RoleWorker, RoleLimiter}

// Auth holds the bearer tokens.
//
// With no tokens, the server refuses every request unless it listens on a
// loopback address, where it serves without authentication (and logs a
// warning); AllowAnonymous lifts that guard.
type Auth struct {
	// Tokens are the accepted bearer tokens.
	Tokens []Token `yaml:"tokens"`
	// AllowAnonymous serves without authentication on any address when no
	// tokens are configured; default false.
	AllowAnonymous bool `yaml:"allow_anonymous"`
}

// Token is one bearer token.
type Token struct {
	// Name identifies the token in logs (the secret never is). Required.
	Name string `yaml:"name"`
	// Token is the secret, at least 16 characters; write it as
	// ${ENV_VAR}. Required.
	Token string `yaml:"token"`
	// Roles are what the token may do. At least one.
	Roles []Role `yaml:"roles"`
}

// Limits holds the rate-limit scenes.
type Limits struct {
	// Timeout bounds one decision's store call; default 100ms.
	Timeout Duration `yaml:"timeout"`
	// Scenes maps a scene name to its policies.
	Scenes map[string]Scene `yaml:"scenes"`
	// Envoy maps Envoy rate-limit descriptors to scenes.
	Envoy []EnvoyRule `yaml:"envoy"`
	// Overrides replace a policy's limits for one subject or for the
	// whole policy (see overrides.go); dynamic ones set through the API
	// take precedence.
	Overrides []Override `yaml:"overrides"`
	// OverrideTTL is how long a server caches an override lookup, so how
	// long another server's change may take to apply; default 1s.
	OverrideTTL Duration `yaml:"override_ttl"`
	// LegacyHeaders adds X-RateLimit-Limit, -Remaining and -Reset to
	// decisions besides the IETF RateLimit fields; default false.
	LegacyHeaders bool `yaml:"legacy_headers"`
}

// Scene is one business scenario, such as "member" or "ip".
type Scene struct {
	// Subject names the fields that identify who is limited, in key
	// order, such as [member] or [out-link, uid]. At least one.
	Subject []string `yaml:"subject"`
	// FailureMode is "open" (default: allow while the store is down) or
	// "closed" (deny).
	FailureMode string `yaml:"failure_mode"`
	// Shadow computes and reports decisions but always allows; default
	// false.
	Shadow bool `yaml:"shadow"`
	// Policies maps a policy (action) name to its limits. At least one.
	Policies map[string]Policy `yaml:"policies"`
}

// Policy is one action of a scene.
type Policy struct {
	// Limits are applied together, all or nothing. At least one.
	Limits []Limit `yaml:"limits"`
	// FailureMode overrides the scene's when set.
	FailureMode string `yaml:"failure_mode"`
	// Shadow overrides the scene's when set.
	Shadow *bool `yaml:"shadow"`
	// InFlight limits calls running at once (acquire/release); default
	// none.
	InFlight *InFlight `yaml:"in_flight"`
	// Unlimited admits every call of the policy without counting, like
	// envoy's unlimited; default false.
	Unlimited bool `yaml:"unlimited"`
}

// Limit is Quota per Window.
type Limit struct {
	// Quota is the cost admitted per window. Required, positive.
	Quota int64 `yaml:"quota"`
	// Window is the window length, such as "1s", "60s" or "1h".
	// Required, at least 1ms.
	Window Duration `yaml:"window"`
	// Algorithm is "fixed-window" (default), "sliding-window" or
	// "token-bucket".
	Algorithm string `yaml:"algorithm"`
	// Burst is a token bucket's capacity; default Quota.
	Burst int64 `yaml:"burst"`
}

// EnvoyRule maps Envoy descriptors of a domain to a scene and policy.
//
// A descriptor matches when its entries have exactly the rule's keys, in
// order, and every entry with a Value carries that value.
type EnvoyRule struct {
	// Domain is the Envoy rate-limit domain. Required.
	Domain string `yaml:"domain"`
	// Scene is the scene to decide in. Required.
	Scene string `yaml:"scene"`
	// Policy is the fixed policy; exactly one of Policy and PolicyKey.
	Policy string `yaml:"policy"`
	// PolicyKey names the entry whose value is the policy.
	PolicyKey string `yaml:"policy_key"`
	// Entries are the descriptor entries, in order. At least one.
	Entries []EnvoyEntry `yaml:"entries"`
	// Name names the rule for Replaces; optional.
	Name string `yaml:"name"`
	// Replaces names rules that are not applied to a request in which
	// this rule matches a descriptor, like envoy ratelimit's replaces.
	Replaces []string `yaml:"replaces"`
}

// EnvoyEntry is one descriptor entry of an EnvoyRule.
type EnvoyEntry struct {
	// Key is the entry's key, such as "remote_address". Required.
	Key string `yaml:"key"`
	// Value, when set, must equal the entry's value.
	Value string `yaml:"value"`
	// Subject names the scene's subject field that takes the entry's
	// value.
	Subject string `yaml:"subject"`
}

// Queues configures the job queue.
type Queues struct {
	// Lease is a job lease's length; default 30s.
	Lease Duration `yaml:"lease"`
	// MaxPayloadBytes bounds a job's payload; default 1 MiB.
	MaxPayloadBytes int64 `yaml:"max_payload_bytes"`
	// MaxDepth caps the pending jobs of one queue; 0 (default) means no
	// cap.
	MaxDepth int64 `yaml:"max_depth"`
	// Retention bounds how long finished jobs are kept.
	Retention Retention `yaml:"retention"`
	// Tenants holds per-tenant limits.
	Tenants Tenants `yaml:"tenants"`
	// Backends places queues on job backends: queue name → "embedded"
	// (SQLite), "redis" or "rabbitmq" (the RabbitMQ lane). Queues it does
	// not name are on DefaultBackend. Read at start: a change takes a
	// restart.
	Backends map[string]string `yaml:"backends"`
	// DefaultBackend holds every queue Backends does not name, and the
	// settings not tied to a queue (tenants, groups, webhook events);
	// default the storage's: "redis" with storage.redis_url, else
	// "embedded".
	DefaultBackend string `yaml:"default_backend"`
	// RabbitMQ connects the rabbitmq backend.
	RabbitMQ RabbitMQ `yaml:"rabbitmq"`
	// MaxAttempts is the attempts of a job enqueued without max_attempts,
	// 1 to 1000; default 25.
	MaxAttempts int `yaml:"max_attempts"`
	// MaxStalls is how many expired leases a job survives before it
	// fails; default 10.
	MaxStalls int `yaml:"max_stalls"`
	// Backoff is the retry delay of a failed attempt that names none;
	// default base 1s, max 1h.
	Backoff Backoff `yaml:"backoff"`
	// PerQueue overrides lease, attempts, stalls, backoff, retention and
	// depth cap for the named queues, and sets their aging step.
	PerQueue map[string]QueueSettings `yaml:"per_queue"`
	// RescueEvery is how often expired leases are looked for; default 1s.
	RescueEvery Duration `yaml:"rescue_every"`
	// Cleanup tunes the deletion of finished jobs.
	Cleanup Cleanup `yaml:"cleanup"`
	// Admission tunes the enqueue checks.
	Admission AdmissionSettings `yaml:"admission"`
	// StartRates limits how fast jobs start per tenant, group and queue.
	StartRates StartRates `yaml:"start_rates"`
	// Priority computes job priorities from each tenant's recent load.
	Priority Priority `yaml:"priority"`
	// Overload refuses work while CPU or memory runs out.
	Overload Overload `yaml:"overload"`
	// Groups fills the settings a new group leaves zero.
	Groups GroupDefaults `yaml:"groups"`
	// Events is the job stores' event log, which GET /v1/events streams
	// and long-polls (?wait=) are woken by.
	Events Events `yaml:"events"`
}

// Events configures the event log. Read at start: a change takes a
// restart.
type Events struct {
	// Disabled turns the log off: GET /v1/events answers 501 and waits
	// poll the store; default false (on).
	Disabled bool `yaml:"disabled"`
	// Retention is how long events are kept for clients that reconnect
	// with Last-Event-ID; default 1h.
	Retention Duration `yaml:"retention"`
	// MaxEvents bounds the log's length, whatever its age; default
	// 100000.
	MaxEvents int `yaml:"max_events"`
}

// Retention bounds how long finished jobs are kept; a negative duration
// keeps them forever.
type Retention struct {
	// Completed jobs are kept 24h by default.
	Completed Duration `yaml:"completed"`
	// Failed jobs are kept 7 days by default.
	Failed Duration `yaml:"failed"`
	// Cancelled jobs are kept 24h by default.
	Cancelled Duration `yaml:"cancelled"`
}

// Tenants holds the default tenant limit and per-tenant overrides.
type Tenants struct {
	// Default applies to every tenant without an override.
	Default TenantLimit `yaml:"default"`
	// Overrides maps a tenant id to its limit.
	Overrides map[string]TenantLimit `yaml:"overrides"`
}

// TenantLimit bounds one tenant. In an override a zero field follows the
// default's value; in the default it means the built-in value below.
type TenantLimit struct {
	// Concurrency is how many of the tenant's jobs may run at once; -1
	// lifts the limit; built-in default: no limit.
	Concurrency int `yaml:"concurrency"`
	// Weight is the tenant's share when tenants take turns at equal
	// priority, 1 to 1000; built-in default 1.
	Weight int `yaml:"weight"`
	// BacklogCap caps the tenant's pending plus waiting jobs (an enqueue
	// over it gets 503); -1 lifts it; built-in default
	// min(max(concurrency×2000, 50000), 2000000).
	BacklogCap int64 `yaml:"backlog_cap"`
	// MaxWait is how long a job may wait for a slot before it fails;
	// built-in default: forever.
	MaxWait Duration `yaml:"max_wait"`
}

// Webhooks holds the webhook subscriptions.
type Webhooks struct {
	// Subscriptions receive events.
	Subscriptions []Subscription `yaml:"subscriptions"`
	// AllowNetworks lists address prefixes (such as 10.20.0.0/16, or one
	// address such as 127.0.0.1) that receivers may have although the
	// SSRF guard refuses their range (private, loopback, link-local).
	// Empty: receivers need public addresses. Allowing a range that holds
	// a cloud metadata endpoint exposes it.
	AllowNetworks []string `yaml:"allow_networks"`
	// Lane, when "rabbitmq", delivers through a durable queue on the
	// RabbitMQ lane (queues.rabbitmq): events are moved from the outbox
	// into LaneQueue, published with confirms, and delivered by the
	// server's workers of that queue. Default "": the server delivers
	// straight from the outbox.
	Lane string `yaml:"lane"`
	// LaneQueue is the queue deliveries go through with Lane; default
	// "webhooks".
	LaneQueue string `yaml:"lane_queue"`
	// Jobs configures the webhooks given with jobs and groups.
	Jobs JobWebhooks `yaml:"jobs"`
	// Delivery tunes the dispatcher: timeout, attempts, backoff,
	// concurrency, … (webhook_tuning.go). Read at start.
	Delivery WebhookDelivery `yaml:"delivery"`
}

// AllowedPrefixes parses AllowNetworks; a bare address is a prefix of
// its full length. Validate has already refused malformed entries.
func (w Webhooks) AllowedPrefixes() []netip.Prefix {
	out := make([]netip.Prefix, 0, len(w.AllowNetworks))
	for _, s := range w.AllowNetworks {
		if p, err := parsePrefix(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}

func parsePrefix(s string) (netip.Prefix, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	return p.Masked(), err
}

// DefaultWebhookLaneQueue is Webhooks.LaneQueue's default.
const DefaultWebhookLaneQueue = "webhooks"

// Queue returns the queue deliveries go through with Lane: LaneQueue, or
// its default when empty.
func (w Webhooks) Queue() string {
	if w.LaneQueue == "" {
		return DefaultWebhookLaneQueue
	}
	return w.LaneQueue
}

// Subscription is one webhook receiver.
type Subscription struct {
	// Name identifies the subscription. Required, unique.
	Name string `yaml:"name"`
	// URL receives POSTed events; http or https. Required.
	URL string `yaml:"url"`
	// Events filters the event types, such as job.completed; empty means
	// all.
	Events []string `yaml:"events"`
	// Secret signs deliveries (HMAC-SHA256); write it as ${ENV_VAR}.
	Secret string `yaml:"secret"`
}

// WebhookEvents lists the event types a subscription may name.
var WebhookEvents = []string{"job.completed", "job.failed", "job.cancelled", "group.completed"}

// Default returns the built-in configuration: the embedded store, no
// scenes, no tokens.
func Default() *Config {
	c := &Config{}
	c.applyDefaults()
	return c
}

// applyDefaults fills zero values with their defaults.
func (c *Config) applyDefaults() {
	s := &c.Server
	if s.Listen == "" {
		s.Listen = DefaultListen
	}
	if s.LogFormat == "" {
		s.LogFormat = "text"
	}
	if s.LogLevel == "" {
		s.LogLevel = "info"
	}
	if s.MaxBodyBytes == 0 {
		s.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if s.ShutdownTimeout == 0 {
		s.ShutdownTimeout = Duration(DefaultShutdownTimeout)
	}
	if c.Storage.DataDir == "" {
		c.Storage.DataDir = DefaultDataDir
	}
	if c.Storage.RedisMode == "" {
		c.Storage.RedisMode = "single"
	}
	if c.Storage.Prefix == "" {
		c.Storage.Prefix = "sluice:"
	}
	if c.Limits.Timeout == 0 {
		c.Limits.Timeout = Duration(100 * time.Millisecond)
	}
	c.Queues.applyDefaults()
	c.Metrics.applyDefaults()
	if c.Webhooks.Lane != "" && c.Webhooks.LaneQueue == "" {
		c.Webhooks.LaneQueue = DefaultWebhookLaneQueue
	}
}

func (q *Queues) applyDefaults() {
	if q.Lease == 0 {
		q.Lease = Duration(30 * time.Second)
	}
	if q.MaxPayloadBytes == 0 {
		q.MaxPayloadBytes = 1 << 20
	}
	r := &q.Retention
	if r.Completed == 0 {
		r.Completed = Duration(24 * time.Hour)
	}
	if r.Failed == 0 {
		r.Failed = Duration(7 * 24 * time.Hour)
	}
	if r.Cancelled == 0 {
		r.Cancelled = Duration(24 * time.Hour)
	}
}
