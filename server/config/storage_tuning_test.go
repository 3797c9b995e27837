package config

import (
	"errors"
	"testing"
)

// TestTuningValidation breaks one rule of the store and webhook delivery
// tuning per case: the problem names the line, the field and the rule.
func TestTuningValidation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, doc string
		line      int
		path, msg string
	}{
		{"sqlite busy", "storage:\n  sqlite:\n    busy_timeout: -1s\n", 3, "storage.sqlite.busy_timeout", "must not be negative, got -1s"},
		{"sqlite conns", "storage:\n  sqlite: {read_conns: -2}\n", 2, "storage.sqlite.read_conns", "must not be negative, got -2"},
		{"sqlite durable", "storage:\n  sqlite:\n    durable: maybe\n", 3, "storage.sqlite.durable", `must be true or false, got "maybe"`},
		{"redis queue batch", "storage:\n  redis_queue:\n    max_batch: -1\n", 3, "storage.redis_queue.max_batch", "must not be negative, got -1"},
		{"redis queue senders", "storage:\n  redis_queue:\n    senders: -1\n", 3, "storage.redis_queue.senders", "must not be negative, got -1"},
		{"redis limits pipelines", "storage:\n  redis_limits:\n    pipelines: -3\n", 3, "storage.redis_limits.pipelines", "must not be negative, got -3"},
		{"deny cache size alone", "storage:\n  redis_limits:\n    deny_cache_size: 10\n", 3, "storage.redis_limits.deny_cache_size", "only applies with deny_cache: true"},
		{"breaker failures", "storage:\n  redis_breaker:\n    failures: -1\n", 3, "storage.redis_breaker.failures", "must not be negative, got -1"},
		{"breaker probe", "storage:\n  redis_breaker:\n    probe_interval: -1s\n", 3, "storage.redis_breaker.probe_interval", "must not be negative, got -1s"},
		{"memory shards", "storage:\n  memory_limits:\n    shards: 100000\n", 3, "storage.memory_limits.shards", "must be from 0 (default 64) to 65536, got 100000"},
		{"memory keys", "storage:\n  memory_limits:\n    max_keys: -1\n", 3, "storage.memory_limits.max_keys", "must not be negative, got -1"},
		{"storage unknown", "storage:\n  sqlite:\n    busy: 1s\n", 3, "storage.sqlite.busy", `unknown field "busy" (known: busy_timeout, durable, read_conns)`},
		{"webhook timeout", "webhooks:\n  delivery:\n    timeout: -1s\n", 3, "webhooks.delivery.timeout", "must not be negative, got -1s"},
		{"webhook attempts", "webhooks:\n  delivery:\n    max_attempts: 101\n", 3, "webhooks.delivery.max_attempts", "must be from 0 (default 5) to 100, got 101"},
		{"webhook backoff", "webhooks:\n  delivery:\n    backoff: {base: 1m, max: 1s}\n", 3, "webhooks.delivery.backoff.max", "must be at least base (1m0s), got 1s"},
		{"webhook concurrency", "webhooks:\n  delivery:\n    concurrency: -1\n", 3, "webhooks.delivery.concurrency", "must be from 0 (default 16) to 1024, got -1"},
		{"webhook lease", "webhooks:\n  delivery:\n    timeout: 10s\n    lease_for: 15s\n", 4, "webhooks.delivery.lease_for", "must be at least twice timeout (10s), got 15s"},
		{"webhook lease default timeout", "webhooks:\n  delivery:\n    lease_for: 5s\n", 3, "webhooks.delivery.lease_for", "must be at least twice timeout (10s), got 5s"},
		{"webhook poll", "webhooks:\n  delivery:\n    poll_interval: -1ms\n", 3, "webhooks.delivery.poll_interval", "must not be negative, got -1ms"},
		{"webhook shutdown", "webhooks:\n  delivery:\n    shutdown_timeout: -1s\n", 3, "webhooks.delivery.shutdown_timeout", "must not be negative, got -1s"},
		{"webhook host rate calls", "webhooks:\n  delivery:\n    host_rate:\n      calls: 0\n      per: 1s\n", 4, "webhooks.delivery.host_rate.calls", "must be a positive integer, got 0"},
		{"webhook host rate per", "webhooks:\n  delivery:\n    host_rate: {calls: 5}\n", 3, "webhooks.delivery.host_rate.per", "must be a positive duration such as 1s, got 0s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseEnv([]byte(tc.doc), "t.yaml", env(nil))
			var cerr *Error
			if !errors.As(err, &cerr) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if len(cerr.Problems) != 1 {
				t.Fatalf("got %d problems, want 1:\n%v", len(cerr.Problems), err)
			}
			got := cerr.Problems[0]
			if got.Line != tc.line || got.Path != tc.path || got.Message != tc.msg {
				t.Errorf("got  line %d path %q msg %q\nwant line %d path %q msg %q", got.Line, got.Path, got.Message, tc.line, tc.path, tc.msg)
			}
		})
	}
}
