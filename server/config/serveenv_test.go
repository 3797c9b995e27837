package config

import (
	"slices"
	"testing"
)

func lookupOf(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

func originOf(t *testing.T, origins []Origin, key string) Origin {
	t.Helper()
	i := slices.IndexFunc(origins, func(o Origin) bool { return o.Key == key })
	if i < 0 {
		t.Fatalf("no origin for %s in %v", key, origins)
	}
	return origins[i]
}

// A flag wins over the environment, the environment over the file, the
// file over the default; each origin is reported.
func TestApplyServeOverridesPrecedence(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte("server:\n  listen: 127.0.0.1:9000\n  log_level: warn\nstorage:\n  data_dir: /from/file\n"), "sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"SLUICE_LISTEN": "127.0.0.1:9100", "SLUICE_POSTGRES_URL": "postgres://env/db", "SLUICE_DATA_DIR": "/from/env",
		"SLUICE_AMQP_URL": "amqp://guest:guest@127.0.0.1:5672/", "SLUICE_METRICS_TOKEN": "metrics-token-0123456789",
	}
	origins := ApplyServeOverrides(cfg, map[string]string{"data-dir": "/from/flag", "listen": ""}, lookupOf(env))
	cases := []struct{ key, got, want, from string }{
		{"server.listen", cfg.Server.Listen, "127.0.0.1:9100", "SLUICE_LISTEN"},
		{"storage.postgres_url", cfg.Storage.PostgresURL, "postgres://env/db", "SLUICE_POSTGRES_URL"},
		{"storage.data_dir", cfg.Storage.DataDir, "/from/flag", "--data-dir"},
		{"server.log_level", cfg.Server.LogLevel, "warn", "file"},
		{"server.log_format", cfg.Server.LogFormat, "text", "default"},
		{"queues.rabbitmq.url", cfg.Queues.RabbitMQ.URL, "amqp://guest:guest@127.0.0.1:5672/", "SLUICE_AMQP_URL"},
		{"metrics.token", cfg.Metrics.Token, "metrics-token-0123456789", "SLUICE_METRICS_TOKEN"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.key, c.got, c.want)
		}
		if o := originOf(t, origins, c.key); o.From != c.from {
			t.Errorf("%s from %q, want %q", c.key, o.From, c.from)
		}
	}
	if o := originOf(t, origins, "storage.postgres_url"); o.Value != "set" {
		t.Errorf("a URL is logged as %q, want it hidden", o.Value)
	}
	if got := StorageOrigin(cfg, origins); got != "postgres (from SLUICE_POSTGRES_URL)" {
		t.Errorf("StorageOrigin = %q", got)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

// Tokens from the environment replace the file's token of their name or
// are added with their roles.
func TestApplyServeOverridesTokens(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte("auth:\n  tokens:\n    - {name: ops, token: file-admin-token-0123, roles: [admin]}\n    - {name: other, token: file-other-token-0123, roles: [limiter]}\n"), "sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SLUICE_ADMIN_TOKEN": "env-admin-token-01234", "SLUICE_WORKER_TOKEN": "env-worker-token-0123"}
	origins := ApplyServeOverrides(cfg, nil, lookupOf(env))
	want := []Token{
		{Name: "ops", Token: "env-admin-token-01234", Roles: []Role{RoleAdmin}},
		{Name: "other", Token: "file-other-token-0123", Roles: []Role{RoleLimiter}},
		{Name: "workers", Token: "env-worker-token-0123", Roles: []Role{RoleWorker}},
	}
	if len(cfg.Auth.Tokens) != len(want) {
		t.Fatalf("tokens = %+v, want %+v", cfg.Auth.Tokens, want)
	}
	for i, w := range want {
		if g := cfg.Auth.Tokens[i]; g.Name != w.Name || g.Token != w.Token || !slices.Equal(g.Roles, w.Roles) {
			t.Errorf("tokens[%d] = %+v, want %+v", i, g, w)
		}
	}
	if o := originOf(t, origins, "auth.tokens[ops]"); o.From != "SLUICE_ADMIN_TOKEN" {
		t.Errorf("ops from %q", o.From)
	}
	if o := originOf(t, origins, "auth.tokens[other]"); o.From != "file" {
		t.Errorf("other from %q", o.From)
	}
	if got := StorageOrigin(cfg, origins); got != "embedded SQLite in ./sluice-data (from default)" {
		t.Errorf("StorageOrigin = %q", got)
	}
}
