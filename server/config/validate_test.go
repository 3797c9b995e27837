package config

import (
	"errors"
	"strings"
	"testing"
)

// scene wraps policy lines (indented 8) into a minimal valid document so a
// case can break one thing.
const sceneHead = "limits:\n  scenes:\n    s:\n      subject: [x]\n      policies:\n"

func TestValidationErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		doc  string
		line int
		path string
		msg  string
	}{
		{"syntax", "server: [\n", 1, "", "did not find expected node content"},
		{"unknown top", "servr: {}\n", 1, "servr", `unknown field "servr" (known: auth, budgets, limits, metrics, queues, schedules, server, storage, telemetry, webhooks)`},
		{"unknown close", "server:\n  log-format: json\n", 2, "server.log-format", `unknown field "log-format" (did you mean "log_format"?)`},
		{"not int", "server:\n  max_body_bytes: lots\n", 2, "server.max_body_bytes", `must be an integer, got "lots"`},
		{"not list", sceneHead + "        p: {limits: 5}\n", 6, "limits.scenes.s.policies.p.limits", `must be a list, got "5"`},
		{"bad duration", "queues:\n  lease: soon\n", 2, "queues.lease", `must be a duration such as 60s, 1m or 7d, got "soon"`},
		{"env unset", "auth:\n  tokens:\n    - {name: a, token: \"${NOPE}\", roles: [admin]}\n", 3, "", "environment variable NOPE is not set"},
		{"listen", "server: {listen: \"8080\"}\n", 1, "server.listen", `must be host:port such as 127.0.0.1:8080, got "8080"`},
		{"grpc port", "server:\n  grpc: \"localhost:99999\"\n", 2, "server.grpc", `must be host:port such as 127.0.0.1:8080, got "localhost:99999"`},
		{"log format", "server:\n  log_format: xml\n", 2, "server.log_format", `must be "text" or "json", got "xml"`},
		{"log level", "server:\n  log_level: loud\n", 2, "server.log_level", `must be "debug", "info", "warn" or "error", got "loud"`},
		{"body negative", "server:\n  max_body_bytes: -1\n", 2, "server.max_body_bytes", "must not be negative, got -1"},
		{"shutdown negative", "server:\n  shutdown_timeout: -1s\n", 2, "server.shutdown_timeout", "must not be negative, got -1s"},
		{"redis url", "storage:\n  redis_url: http://x:secret@h\n", 2, "storage.redis_url", "must be a redis:// or rediss:// URL such as redis://127.0.0.1:6379/0 (single mode)"},
		{"postgres url", "storage:\n  postgres_url: mysql://u:secret@h/db\n", 2, "storage.postgres_url", "must be a postgres:// or postgresql:// URL such as postgres://sluice@127.0.0.1:5432/app"},
		{"postgres schema", "storage:\n  postgres: {schema: \"Jobs-1\"}\n", 2, "storage.postgres.schema", `must be a lower-case identifier (letters, digits, _; at most 63), got "Jobs-1"`},
		{"postgres max conns", "storage:\n  postgres: {max_conns: -1}\n", 2, "storage.postgres.max_conns", "must be from 0 (default) to 10000, got -1"},
		{"redis mode", "storage:\n  redis_mode: ring\n", 2, "storage.redis_mode", `must be "single", "cluster" or "sentinel", got "ring"`},
		{"cluster url", "storage:\n  redis_mode: cluster\n  redis_url: \"redis://h:1?bogus=1\"\n", 3, "storage.redis_url", "must be a redis:// or rediss:// URL such as redis://127.0.0.1:6379/0 (cluster mode)"},
		{"sentinel url", "storage:\n  redis_mode: sentinel\n  redis_url: \"http://h:1\"\n", 3, "storage.redis_url", "must be a redis:// or rediss:// URL such as redis://127.0.0.1:6379/0 (sentinel mode)"},
		{"prefix", "storage:\n  prefix: \"a b\"\n", 2, "storage.prefix", `must be a namespace followed by ':' such as "sluice:" or "team-a:jobs:", got "a b"`},
		{"token name", "auth:\n  tokens:\n    - {token: 0123456789abcdef, roles: [admin]}\n", 3, "auth.tokens[0].name", "is required"},
		{"token dup name", "auth:\n  tokens:\n    - {name: a, token: 0123456789abcdef, roles: [admin]}\n    - {name: a, token: 0123456789abcdeX, roles: [admin]}\n", 4, "auth.tokens[1].name", `duplicate name "a" (also tokens[0])`},
		{"token missing", "auth:\n  tokens:\n    - {name: a, roles: [admin]}\n", 3, "auth.tokens[0].token", "is required (write it as ${ENV_VAR})"},
		{"token short", "auth:\n  tokens:\n    - {name: a, token: short, roles: [admin]}\n", 3, "auth.tokens[0].token", "must be at least 16 characters, got 5"},
		{"token dup secret", "auth:\n  tokens:\n    - {name: a, token: 0123456789abcdef, roles: [admin]}\n    - {name: b, token: 0123456789abcdef, roles: [admin]}\n", 4, "auth.tokens[1].token", "same secret as tokens[0]"},
		{"roles empty", "auth:\n  tokens:\n    - {name: a, token: 0123456789abcdef}\n", 3, "auth.tokens[0].roles", "must name at least one role (admin, producer, worker, limiter)"},
		{"role unknown", "auth:\n  tokens:\n    - name: a\n      token: 0123456789abcdef\n      roles: [root]\n", 5, "auth.tokens[0].roles[0]", `unknown role "root" (known: admin, producer, worker, limiter)`},
		{"limits timeout", "limits:\n  timeout: -5ms\n", 2, "limits.timeout", "must not be negative, got -5ms"},
		{"scene name", "limits:\n  scenes:\n    \"bad/name\":\n      subject: [x]\n      policies: {p: {limits: [{quota: 1, window: 1s}]}}\n", 3, "limits.scenes.bad/name", `scene name "bad/name" must start with a letter or digit and hold only letters, digits, '.', '_' and '-'`},
		{"no subject", "limits:\n  scenes:\n    s:\n      policies: {p: {limits: [{quota: 1, window: 1s}]}}\n", 3, "limits.scenes.s.subject", "must name at least one subject field, such as [member]"},
		{"dup subject", "limits:\n  scenes:\n    s:\n      subject: [a, a]\n      policies: {p: {limits: [{quota: 1, window: 1s}]}}\n", 4, "limits.scenes.s.subject[1]", `duplicate subject field "a" (also subject[0])`},
		{"subject name", "limits:\n  scenes:\n    s:\n      subject: [\"-x\"]\n      policies: {p: {limits: [{quota: 1, window: 1s}]}}\n", 4, "limits.scenes.s.subject[0]", `subject field name "-x" must start with a letter or digit and hold only letters, digits, '.', '_' and '-'`},
		{"scene failure mode", "limits:\n  scenes:\n    s:\n      subject: [x]\n      failure_mode: maybe\n      policies: {p: {limits: [{quota: 1, window: 1s}]}}\n", 5, "limits.scenes.s.failure_mode", `must be "open" or "closed", got "maybe"`},
		{"no policies", "limits:\n  scenes:\n    s:\n      subject: [x]\n", 3, "limits.scenes.s.policies", "must define at least one policy"},
		{"policy failure mode", sceneHead + "        p:\n          failure_mode: shut\n          limits: [{quota: 1, window: 1s}]\n", 7, "limits.scenes.s.policies.p.failure_mode", `must be "open" or "closed", got "shut"`},
		{"no limits", sceneHead + "        p: {}\n", 6, "limits.scenes.s.policies.p.limits", "must hold at least one limit, such as {quota: 10, window: 60s}"},
		{"quota", sceneHead + "        p:\n          limits:\n            - {quota: -3, window: 1s}\n", 8, "limits.scenes.s.policies.p.limits[0].quota", "must be a positive integer, got -3"},
		{"window missing", sceneHead + "        p:\n          limits:\n            - {quota: 3}\n", 8, "limits.scenes.s.policies.p.limits[0].window", "is required: a duration such as 1s, 60s or 1h"},
		{"window sub-ms", sceneHead + "        p:\n          limits:\n            - {quota: 3, window: 1500us}\n", 8, "limits.scenes.s.policies.p.limits[0].window", "must be a whole number of milliseconds, got 1.5ms"},
		{"algorithm", sceneHead + "        p:\n          limits:\n            - {quota: 3, window: 1s, algorithm: leaky}\n", 8, "limits.scenes.s.policies.p.limits[0].algorithm", `must be "fixed-window", "sliding-window" or "token-bucket", got "leaky"`},
		{"burst negative", sceneHead + "        p:\n          limits:\n            - {quota: 3, window: 1s, algorithm: token-bucket, burst: -1}\n", 8, "limits.scenes.s.policies.p.limits[0].burst", "must not be negative, got -1"},
		{"burst not bucket", sceneHead + "        p:\n          limits:\n            - {quota: 3, window: 1s, burst: 5}\n", 8, "limits.scenes.s.policies.p.limits[0].burst", "only applies to algorithm token-bucket"},
		{"same counter", sceneHead + "        p:\n          limits:\n            - {quota: 3, window: 1s}\n            - {quota: 9, window: 1s}\n", 9, "limits.scenes.s.policies.p.limits[1]", "has the same algorithm and window as limits[0]: they would share one counter"},
		{"envoy domain", sceneHead + "        p: {limits: [{quota: 1, window: 1s}]}\n  envoy:\n    - {scene: s, policy: p, entries: [{key: k, subject: x}]}\n", 8, "limits.envoy[0].domain", "is required"},
		{"envoy scene", sceneHead + "        p: {limits: [{quota: 1, window: 1s}]}\n  envoy:\n    - {domain: d, scene: nope, policy: p, entries: [{key: k}]}\n", 8, "limits.envoy[0].scene", `unknown scene "nope"`},
		{"envoy no policy", sceneHead + "        p: {limits: [{quota: 1, window: 1s}]}\n  envoy:\n    - {domain: d, scene: s, entries: [{key: k, subject: x}]}\n", 8, "limits.envoy[0]", "must set policy or policy_key"},
		{"envoy both policy", sceneHead + "        p: {limits: [{quota: 1, window: 1s}]}\n  envoy:\n    - {domain: d, scene: s, policy: p, policy_key: k, entries: [{key: k}, {key: v, subject: x}]}\n", 8, "limits.envoy[0].policy_key", "must not be set together with policy"},
		{"envoy unknown policy", sceneHead + "        p: {limits: [{quota: 1, window: 1s}]}\n  envoy:\n    - {domain: d, scene: s, policy: q, entries: [{key: k, subject: x}]}\n", 8, "limits.envoy[0].policy", `unknown policy "q" in scene "s"`},
		{"envoy policy key", sceneHead + "        p: {limits: [{quota: 1, window: 1s}]}\n  envoy:\n    - {domain: d, scene: s, policy_key: a, entries: [{key: k, subject: x}]}\n", 8, "limits.envoy[0].policy_key", `must name one of the entries' keys, got "a"`},
		{"envoy policy key value", sceneHead + "        p: {limits: [{quota: 1, window: 1s}]}\n  envoy:\n    - {domain: d, scene: s, policy_key: a, entries: [{key: a, value: v}, {key: k, subject: x}]}\n", 8, "limits.envoy[0].entries[0]", "is the policy_key entry: it must have neither value nor subject"},
		{"envoy no entries", sceneHead + "        p: {limits: [{quota: 1, window: 1s}]}\n  envoy:\n    - domain: d\n      scene: s\n      policy: p\n", 8, "limits.envoy[0].entries", "must hold at least one entry"},
		{"envoy key", sceneHead + "        p: {limits: [{quota: 1, window: 1s}]}\n  envoy:\n    - domain: d\n      scene: s\n      policy: p\n      entries:\n        - {subject: x}\n", 12, "limits.envoy[0].entries[0].key", "is required"},
		{"envoy dup key", sceneHead + "        p: {limits: [{quota: 1, window: 1s}]}\n  envoy:\n    - domain: d\n      scene: s\n      policy: p\n      entries:\n        - {key: k, subject: x}\n        - {key: k}\n", 13, "limits.envoy[0].entries[1].key", `duplicate key "k" (also entries[0])`},
		{"envoy value and subject", sceneHead + "        p: {limits: [{quota: 1, window: 1s}]}\n  envoy:\n    - domain: d\n      scene: s\n      policy: p\n      entries:\n        - {key: k, subject: x, value: v}\n", 12, "limits.envoy[0].entries[0].subject", "must not be set together with value"},
		{"envoy subject unknown", sceneHead + "        p: {limits: [{quota: 1, window: 1s}]}\n  envoy:\n    - domain: d\n      scene: s\n      policy: p\n      entries:\n        - {key: k, subject: x}\n        - {key: j, subject: y}\n", 13, "limits.envoy[0].entries[1].subject", `scene "s" has no subject field "y" (fields: x)`},
		{"envoy subject twice", sceneHead + "        p: {limits: [{quota: 1, window: 1s}]}\n  envoy:\n    - domain: d\n      scene: s\n      policy: p\n      entries:\n        - {key: k, subject: x}\n        - {key: j, subject: x}\n", 13, "limits.envoy[0].entries[1].subject", `subject field "x" is already taken by another entry`},
		{"envoy subject missing", sceneHead + "        p: {limits: [{quota: 1, window: 1s}]}\n  envoy:\n    - domain: d\n      scene: s\n      policy: p\n      entries:\n        - {key: k, value: v}\n", 11, "limits.envoy[0].entries", `no entry gives subject field "x" of scene "s"`},
		{"envoy duplicate rule", sceneHead + "        p: {limits: [{quota: 1, window: 1s}]}\n  envoy:\n    - {domain: d, scene: s, policy: p, entries: [{key: k, subject: x}]}\n    - {domain: d, scene: s, policy: p, entries: [{key: k, subject: x}]}\n", 9, "limits.envoy[1]", "matches the same descriptors as envoy[0]"},
		{"queue lease", "queues:\n  lease: -1s\n", 2, "queues.lease", "must not be negative, got -1s"},
		{"payload", "queues:\n  max_payload_bytes: -2\n", 2, "queues.max_payload_bytes", "must not be negative, got -2"},
		{"depth", "queues:\n  max_depth: -2\n", 2, "queues.max_depth", "must not be negative, got -2"},
		{"event log length", "queues:\n  events:\n    max_events: -1\n", 3, "queues.events.max_events", "must not be negative, got -1"},
		{"tenant default", "queues:\n  tenants:\n    default: {concurrency: -2}\n", 3, "queues.tenants.default.concurrency", "must be -1 (unlimited), 0 (default) or positive, got -2"},
		{"tenant override", "queues:\n  tenants:\n    overrides:\n      acme:\n        weight: -2\n", 5, "queues.tenants.overrides.acme.weight", "must be from 0 (default) to 1000, got -2"},
		{"tenant backlog", "queues:\n  tenants:\n    default:\n      backlog_cap: -9\n", 4, "queues.tenants.default.backlog_cap", "must be -1 (unlimited), 0 (default) or positive, got -9"},
		{"tenant max wait", "queues:\n  tenants:\n    default:\n      max_wait: -1h\n", 4, "queues.tenants.default.max_wait", "must not be negative, got -1h0m0s"},
		{"webhook name", "webhooks:\n  subscriptions:\n    - {url: https://x.test/h}\n", 3, "webhooks.subscriptions[0].name", "is required"},
		{"webhook dup", "webhooks:\n  subscriptions:\n    - {name: a, url: https://x.test/h}\n    - {name: a, url: https://x.test/h}\n", 4, "webhooks.subscriptions[1].name", `duplicate name "a" (also subscriptions[0])`},
		{"webhook url missing", "webhooks:\n  subscriptions:\n    - {name: a}\n", 3, "webhooks.subscriptions[0].url", "is required"},
		{"webhook allow", "webhooks:\n  allow_networks: [127.0.0.1, 10.0.0.0/33]\n", 2, "webhooks.allow_networks[1]", `must be an address or a prefix such as 10.20.0.0/16, got "10.0.0.0/33"`},
		{"webhook url", "webhooks:\n  subscriptions:\n    - {name: a, url: ftp://x.test/h}\n", 3, "webhooks.subscriptions[0].url", "must be an absolute http or https URL"},
		{"webhook event", "webhooks:\n  subscriptions:\n    - name: a\n      url: https://x.test/h\n      events: [job.completed, job.exploded]\n", 5, "webhooks.subscriptions[0].events[1]", `unknown event "job.exploded" (known: job.completed, job.failed, job.cancelled, group.completed)`},
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
			if got.Line != tc.line || got.Path != tc.path || (tc.msg != "" && got.Message != tc.msg) {
				t.Errorf("got  line %d path %q msg %q\nwant line %d path %q msg %q", got.Line, got.Path, got.Message, tc.line, tc.path, tc.msg)
			}
		})
	}
}

func TestDecoderAndValidatorProblemsNotDoubled(t *testing.T) {
	t.Parallel()
	// quota cannot be read: one problem for that line, not a second
	// "must be a positive integer" for the zero it left behind.
	doc := sceneHead + "        p:\n          limits:\n            - {quota: many, window: 1s}\n"
	_, err := Parse([]byte(doc), "t.yaml")
	var cerr *Error
	if !errors.As(err, &cerr) || len(cerr.Problems) != 1 {
		t.Fatalf("err = %v, want exactly one problem", err)
	}
	if got, want := cerr.Problems[0].String(), `line 8: limits.scenes.s.policies.p.limits[0].quota: must be an integer, got "many"`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSecretsNeverInErrors(t *testing.T) {
	t.Parallel()
	doc := "storage:\n  redis_url: \"${URL}\"\n"
	_, err := ParseEnv([]byte(doc), "t.yaml", env(map[string]string{"URL": "http://user:hunter2hunter2@h/"}))
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %v: must fail without the secret", err)
	}
}
