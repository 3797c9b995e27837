package config

import (
	"errors"
	"strings"
	"testing"
)

func TestQueuePlacementErrors(t *testing.T) {
	t.Parallel()
	const redis = "storage:\n  redis_url: redis://127.0.0.1:6379/0\n"
	cases := []struct {
		name string
		doc  string
		line int
		path string
		msg  string
	}{
		{"unknown backend", "queues:\n  backends:\n    scrape: kafka\n", 3, "queues.backends.scrape", `unknown backend "kafka" (known: embedded, redis, rabbitmq, postgres)`},
		{"unknown default", "queues:\n  default_backend: s3\n", 2, "queues.default_backend", `unknown backend "s3" (known: embedded, redis, rabbitmq, postgres)`},
		{"redis without storage", "queues:\n  backends:\n    report: redis\n", 3, "queues.backends.report", "is on redis, which needs storage.redis_url"},
		{"redis default without storage", "queues:\n  default_backend: redis\n", 2, "queues.default_backend", "is on redis, which needs storage.redis_url"},
		{"postgres without storage", "queues:\n  backends:\n    ledger: postgres\n", 3, "queues.backends.ledger", "is on postgres, which needs storage.postgres_url"},
		{"postgres default without storage", "queues:\n  default_backend: postgres\n", 2, "queues.default_backend", "is on postgres, which needs storage.postgres_url"},
		{"rabbitmq without url", "queues:\n  backends:\n    scrape: rabbitmq\n", 1, "queues.rabbitmq.url", "is required: queues.backends.scrape is on rabbitmq"},
		{"rabbitmq bad url", "queues:\n  rabbitmq:\n    url: http://guest:secret@h/\n", 3, "queues.rabbitmq.url", "must be an amqp:// or amqps:// URL such as amqp://guest:guest@127.0.0.1:5672/"},
		{"prefetch", "queues:\n  rabbitmq:\n    prefetch: 70000\n", 3, "queues.rabbitmq.prefetch", "must be from 0 (default) to 65535, got 70000"},
		{"consumers over prefetch", "queues:\n  rabbitmq:\n    prefetch: 2\n    consumers: 3\n", 4, "queues.rabbitmq.consumers", "must be at most prefetch (2), got 3"},
		{"priorities", "queues:\n  rabbitmq:\n    priorities: 300\n", 3, "queues.rabbitmq.priorities", "must be from 0 (default) to 255, got 300"},
		{"buckets", "queues:\n  rabbitmq:\n    delay_buckets: [1s, 500ms]\n", 3, "queues.rabbitmq.delay_buckets[1]", "must be ascending whole milliseconds, got 500ms"},
		{"recorder", "queues:\n  rabbitmq:\n    recorder: disk\n", 3, "queues.rabbitmq.recorder", `must be "memory" or "redis", got "disk"`},
		{"redis recorder without storage", "queues:\n  rabbitmq:\n    recorder: redis\n", 3, "queues.rabbitmq.recorder", "redis needs storage.redis_url"},
		{"scheduler", "queues:\n  rabbitmq:\n    scheduler: memory\n", 3, "queues.rabbitmq.scheduler", `must be "redis" or empty (no tenant scheduling on the lane), got "memory"`},
		{"redis scheduler without storage", "queues:\n  rabbitmq:\n    scheduler: redis\n", 3, "queues.rabbitmq.scheduler", "redis needs storage.redis_url"},
		{"webhook lane", "webhooks:\n  lane: kafka\n", 2, "webhooks.lane", `must be "rabbitmq" or empty (deliver from the outbox), got "kafka"`},
		{"webhook lane without url", "webhooks:\n  lane: rabbitmq\n", 1, "queues.rabbitmq.url", "is required: webhooks.lane is on rabbitmq"},
		{"webhook lane queue alone", "webhooks:\n  lane_queue: hooks\n", 2, "webhooks.lane_queue", "only applies with webhooks.lane"},
		{"webhook lane queue elsewhere", "queues:\n  backends:\n    webhooks: embedded\n  rabbitmq: {url: \"amqp://h/\"}\nwebhooks:\n  lane: rabbitmq\n", 3, "queues.backends.webhooks", "is webhooks.lane_queue, which webhooks.lane places on rabbitmq"},
		{"unknown rabbitmq field", redis + "queues:\n  rabbitmq:\n    prefetc: 1\n", 5, "queues.rabbitmq.prefetc", `unknown field "prefetc"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEnv([]byte(tc.doc), "f.yaml", func(string) (string, bool) { return "", false })
			var cerr *Error
			if !errors.As(err, &cerr) {
				t.Fatalf("err = %v, want *Error", err)
			}
			for _, p := range cerr.Problems {
				if p.Path == tc.path {
					if p.Line != tc.line || !strings.Contains(p.Message, tc.msg) {
						t.Errorf("problem = %v, want line %d: %s: %s", p, tc.line, tc.path, tc.msg)
					}
					if strings.Contains(p.Message, "secret") {
						t.Errorf("problem %v echoes the URL's password", p)
					}
					return
				}
			}
			t.Fatalf("problems = %v, want one at %s", cerr.Problems, tc.path)
		})
	}
}

func TestQueuePlacement(t *testing.T) {
	t.Parallel()
	doc := `
storage:
  redis_url: redis://127.0.0.1:6379/0
queues:
  backends:
    scrape: rabbitmq
    report: embedded
  rabbitmq:
    url: amqp://guest:guest@127.0.0.1:5672/
    prefetch: 100
`
	cfg, err := Parse([]byte(doc), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ queue, want string }{{"scrape", "rabbitmq"}, {"report", "embedded"}, {"other", "redis"}} {
		if got := cfg.BackendOf(tc.queue); got != tc.want {
			t.Errorf("BackendOf(%s) = %s, want %s", tc.queue, got, tc.want)
		}
	}
	if cfg.BackendOf("webhooks") != BackendRedis {
		t.Error("the webhooks queue is placed without webhooks.lane")
	}
	cfg.Webhooks.Lane = BackendRabbitMQ
	if err := cfg.Validate(); err != nil || cfg.Webhooks.LaneQueue != "webhooks" || cfg.BackendOf("webhooks") != BackendRabbitMQ {
		t.Errorf("with webhooks.lane: %v, lane queue %q on %s", err, cfg.Webhooks.LaneQueue, cfg.BackendOf("webhooks"))
	}
	if !cfg.UsesBackend(BackendRabbitMQ) || !cfg.UsesBackend(BackendEmbedded) || !cfg.UsesBackend(BackendRedis) {
		t.Error("UsesBackend misses a backend in use")
	}
	if Default().UsesBackend(BackendRabbitMQ) || Default().DefaultBackendOf() != BackendEmbedded {
		t.Error("the default config uses something other than embedded")
	}
}

// storage.postgres_url moves the jobs to Postgres unless Redis has them.
func TestPostgresDefaultBackend(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		redis, postgres, def string
		want                 string
	}{
		{"", "", "", BackendEmbedded},
		{"", "postgres://h/db", "", BackendPostgres},
		{"redis://h:6379/0", "postgres://h/db", "", BackendRedis},
		{"redis://h:6379/0", "postgres://h/db", BackendPostgres, BackendPostgres},
		{"", "postgres://h/db", BackendEmbedded, BackendEmbedded},
	} {
		cfg := Default()
		cfg.Storage.RedisURL, cfg.Storage.PostgresURL, cfg.Queues.DefaultBackend = tc.redis, tc.postgres, tc.def
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		if got := cfg.DefaultBackendOf(); got != tc.want {
			t.Errorf("redis %q, postgres %q, default_backend %q: DefaultBackendOf = %s, want %s", tc.redis, tc.postgres, tc.def, got, tc.want)
		}
	}
}

// The example's commented placement block is valid once uncommented.
func TestExamplePlacementBlock(t *testing.T) {
	t.Parallel()
	var out []string
	in := false
	for _, line := range strings.Split(string(Example), "\n") {
		switch {
		case line == "  # backends:":
			in = true
		case in && !strings.HasPrefix(line, "  #   ") && !strings.HasPrefix(line, "  # rabbitmq:"):
			in = false
		}
		if in {
			line = "  " + strings.TrimPrefix(line, "  # ")
		}
		out = append(out, line)
	}
	cfg, err := ParseEnv([]byte(strings.Join(out, "\n")), "example", env(map[string]string{"SLUICE_AMQP_URL": "amqp://guest:guest@127.0.0.1:5672/"}))
	if err != nil {
		t.Fatalf("example with its placement block: %v", err)
	}
	if cfg.BackendOf("scrape") != BackendRabbitMQ || cfg.Queues.RabbitMQ.Prefetch != 256 || cfg.BackendOf("report") != BackendEmbedded {
		t.Fatalf("placement = %v, rabbitmq = %+v", cfg.Queues.Backends, cfg.Queues.RabbitMQ)
	}
}
