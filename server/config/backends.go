package config

import (
	"net/url"
	"slices"
	"strings"
)

// The job backends a queue may be placed on.
const (
	BackendEmbedded = "embedded" // SQLite in storage.data_dir
	BackendRedis    = "redis"    // Redis at storage.redis_url
	BackendRabbitMQ = "rabbitmq" // the RabbitMQ lane at queues.rabbitmq.url
	BackendPostgres = "postgres" // PostgreSQL at storage.postgres_url
)

// QueueBackends lists the backend names queues.backends may use.
var QueueBackends = []string{BackendEmbedded, BackendRedis, BackendRabbitMQ, BackendPostgres}

// RabbitMQ connects the RabbitMQ lane (queue/amqpqueue), the backend of
// queues placed on "rabbitmq". Zero fields take the lane's defaults.
type RabbitMQ struct {
	// URL is the broker, such as "amqp://guest:guest@127.0.0.1:5672/";
	// write the password as ${ENV_VAR}. Required when a queue is on
	// rabbitmq.
	URL string `yaml:"url"`
	// Prefix goes before every broker queue name; default "sluice.".
	Prefix string `yaml:"prefix"`
	// Prefetch is how many deliveries the broker pushes ahead to each
	// queue's consumer; default 256, at most 65535.
	Prefetch int `yaml:"prefetch"`
	// Consumers is how many channels consume each queue; default 1, at
	// most Prefetch.
	Consumers int `yaml:"consumers"`
	// MaxRedeliveries is how often a job may come back unacknowledged
	// before it is dead-lettered; default 20.
	MaxRedeliveries int `yaml:"max_redeliveries"`
	// Priorities, when positive, makes the lane's queues classic queues
	// with that many priorities (JobSpec.Priority); default 0: quorum
	// queues, no priorities. At most 255.
	Priorities int `yaml:"priorities"`
	// Publishers is how many confirm-mode channels publish; default 4.
	Publishers int `yaml:"publishers"`
	// DelayBuckets are the fixed delays of the delay queues, ascending
	// whole milliseconds; default 250ms, 1s, 5s, 30s, 2m, 10m, 1h, 6h, 24h.
	DelayBuckets []Duration `yaml:"delay_buckets"`
	// DeadLetterTTL is how long dead letters are kept; default 7d.
	DeadLetterTTL Duration `yaml:"dead_letter_ttl"`
	// DeadLetterMax bounds each dead-letter queue; default 100000.
	DeadLetterMax int `yaml:"dead_letter_max"`
	// Recorder is where job states are kept for GET /v1/jobs/{id}:
	// "memory" (default, in this process) or "redis" (on storage.redis_url,
	// shared by every server).
	Recorder string `yaml:"recorder"`
	// Scheduler is where the lane's jobs with a tenant or a group are
	// scheduled (tenant limits, fair order, group limits and completion):
	// "redis" (on storage.redis_url, shared by every server), or empty
	// (default): none, and such jobs are refused where a limit or a group
	// would need it.
	Scheduler string `yaml:"scheduler"`
}

// DefaultBackendOf returns the backend of the queues queues.backends does
// not name: queues.default_backend when set, else the storage's ("redis"
// with storage.redis_url, else "postgres" with storage.postgres_url, else
// "embedded").
func (c *Config) DefaultBackendOf() string {
	if c.Queues.DefaultBackend != "" {
		return c.Queues.DefaultBackend
	}
	if c.Storage.RedisURL != "" {
		return BackendRedis
	}
	if c.Storage.PostgresURL != "" {
		return BackendPostgres
	}
	return BackendEmbedded
}

// Placement returns queue name → backend for every queue not on the
// default: queues.backends, plus webhooks.lane_queue on webhooks.lane when
// that is set.
func (c *Config) Placement() map[string]string {
	out := make(map[string]string, len(c.Queues.Backends)+1)
	for q, b := range c.Queues.Backends {
		out[q] = b
	}
	if w := c.Webhooks; w.Lane != "" {
		out[w.Queue()] = w.Lane
	}
	return out
}

// BackendOf returns the backend queue q is placed on.
func (c *Config) BackendOf(q string) string {
	if b, ok := c.Placement()[q]; ok {
		return b
	}
	return c.DefaultBackendOf()
}

// UsesBackend reports whether any queue (or the default) is on backend.
func (c *Config) UsesBackend(backend string) bool {
	if c.DefaultBackendOf() == backend {
		return true
	}
	for _, b := range c.Placement() {
		if b == backend {
			return true
		}
	}
	return false
}

// placement checks queues.default_backend, queues.backends and
// queues.rabbitmq against each other and against storage.
func (v *validator) placement(c *Config) {
	q := &c.Queues
	base := []any{"queues"}
	known := strings.Join(QueueBackends, ", ")
	if q.DefaultBackend != "" && !slices.Contains(QueueBackends, q.DefaultBackend) {
		v.add(p(base, "default_backend"), "unknown backend %q (known: %s)", q.DefaultBackend, known)
	}
	for _, name := range sortedKeys(q.Backends) {
		path := p(base, "backends", name)
		if name == "" {
			v.add(path, "a queue name must not be empty")
		}
		if b := q.Backends[name]; !slices.Contains(QueueBackends, b) {
			v.add(path, "unknown backend %q (known: %s)", b, known)
		}
	}
	v.webhookLane(c)
	// Where a backend is used, for the message: the first queue on it.
	usedAt := func(backend string) []any {
		if q.DefaultBackend == backend {
			return p(base, "default_backend")
		}
		if c.Webhooks.Lane == backend {
			return []any{"webhooks", "lane"}
		}
		for _, name := range sortedKeys(q.Backends) {
			if q.Backends[name] == backend {
				return p(base, "backends", name)
			}
		}
		return nil
	}
	if at := usedAt(BackendRedis); at != nil && c.Storage.RedisURL == "" {
		v.add(at, "is on redis, which needs storage.redis_url")
	}
	if at := usedAt(BackendPostgres); at != nil && c.Storage.PostgresURL == "" {
		v.add(at, "is on postgres, which needs storage.postgres_url")
	}
	if q.RabbitMQ.Recorder == "redis" && c.Storage.RedisURL == "" {
		v.add(p(base, "rabbitmq", "recorder"), "redis needs storage.redis_url")
	}
	if q.RabbitMQ.Scheduler == "redis" && c.Storage.RedisURL == "" {
		v.add(p(base, "rabbitmq", "scheduler"), "redis needs storage.redis_url")
	}
	rabbit := usedAt(BackendRabbitMQ) != nil
	v.rabbitmq(&q.RabbitMQ, rabbit, usedAt(BackendRabbitMQ))
}

func (v *validator) rabbitmq(r *RabbitMQ, used bool, usedAt []any) {
	base := []any{"queues", "rabbitmq"}
	switch u, err := url.Parse(r.URL); {
	case r.URL == "" && used:
		v.add(p(base, "url"), "is required: %s is on rabbitmq", render(usedAt))
	case r.URL != "" && (err != nil || (u.Scheme != "amqp" && u.Scheme != "amqps") || u.Host == ""):
		// The URL may hold a password: say what is wrong, never echo it.
		v.add(p(base, "url"), "must be an amqp:// or amqps:// URL such as amqp://guest:guest@127.0.0.1:5672/")
	}
	ints := []struct {
		name      string
		n, lo, hi int
	}{
		{"prefetch", r.Prefetch, 0, 65535},
		{"consumers", r.Consumers, 0, 65535},
		{"max_redeliveries", r.MaxRedeliveries, 0, 1 << 30},
		{"priorities", r.Priorities, 0, 255},
		{"publishers", r.Publishers, 0, 1024},
		{"dead_letter_max", r.DeadLetterMax, 0, 1 << 30},
	}
	for _, f := range ints {
		if f.n < f.lo || f.n > f.hi {
			v.add(p(base, f.name), "must be from %d (default) to %d, got %d", f.lo, f.hi, f.n)
		}
	}
	if r.Prefetch > 0 && r.Consumers > r.Prefetch {
		v.add(p(base, "consumers"), "must be at most prefetch (%d), got %d", r.Prefetch, r.Consumers)
	}
	v.nonNegativeDuration(p(base, "dead_letter_ttl"), r.DeadLetterTTL)
	for i, d := range r.DelayBuckets {
		if d.D() <= 0 || d.D()%1e6 != 0 || (i > 0 && d <= r.DelayBuckets[i-1]) {
			v.add(p(base, "delay_buckets", i), "must be ascending whole milliseconds, got %s", d)
		}
	}
	if r.Recorder != "" && r.Recorder != "memory" && r.Recorder != "redis" {
		v.add(p(base, "recorder"), `must be "memory" or "redis", got %q`, r.Recorder)
	}
	if r.Scheduler != "" && r.Scheduler != "redis" {
		v.add(p(base, "scheduler"), `must be "redis" or empty (no tenant scheduling on the lane), got %q`, r.Scheduler)
	}
}

// webhookLane checks webhooks.lane and webhooks.lane_queue.
func (v *validator) webhookLane(c *Config) {
	w := c.Webhooks
	switch w.Lane {
	case "":
		if w.LaneQueue != "" {
			v.add([]any{"webhooks", "lane_queue"}, "only applies with webhooks.lane")
		}
		return
	case BackendRabbitMQ:
	default:
		v.add([]any{"webhooks", "lane"}, `must be "rabbitmq" or empty (deliver from the outbox), got %q`, w.Lane)
		return
	}
	if b, ok := c.Queues.Backends[w.Queue()]; ok && b != w.Lane {
		v.add([]any{"queues", "backends", w.Queue()}, "is webhooks.lane_queue, which webhooks.lane places on %s", w.Lane)
	}
}
