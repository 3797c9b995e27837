package config

import (
	"fmt"
	"slices"
	"strings"
)

// ServeSetting is a setting sluice serve takes from a command-line flag or
// an environment variable over the config file: a non-empty flag wins,
// then a non-empty variable, then the file, then the default.
type ServeSetting struct {
	// Key is the file's key, such as "storage.postgres_url".
	Key string
	// Flag is the flag's name without dashes ("postgres-url"); empty when
	// the setting has no flag.
	Flag string
	// Env is the environment variable, such as "SLUICE_POSTGRES_URL".
	Env string
	// Secret settings are never printed (URLs may hold passwords).
	Secret bool
	// def is the default value ("" when none).
	def string
	at  func(*Config) *string
}

// ServeSettings lists every setting sluice serve reads from a flag or the
// environment, in the order the start line reports them.
var ServeSettings = []ServeSetting{
	{Key: "server.listen", Flag: "listen", Env: "SLUICE_LISTEN", def: DefaultListen, at: func(c *Config) *string { return &c.Server.Listen }},
	{Key: "server.grpc", Flag: "grpc", Env: "SLUICE_GRPC", at: func(c *Config) *string { return &c.Server.GRPC }},
	{Key: "storage.redis_url", Flag: "redis-url", Env: "SLUICE_REDIS_URL", Secret: true, at: func(c *Config) *string { return &c.Storage.RedisURL }},
	{Key: "storage.redis_mode", Flag: "redis-mode", Env: "SLUICE_REDIS_MODE", def: "single", at: func(c *Config) *string { return &c.Storage.RedisMode }},
	{Key: "storage.postgres_url", Flag: "postgres-url", Env: "SLUICE_POSTGRES_URL", Secret: true, at: func(c *Config) *string { return &c.Storage.PostgresURL }},
	{Key: "storage.data_dir", Flag: "data-dir", Env: "SLUICE_DATA_DIR", def: DefaultDataDir, at: func(c *Config) *string { return &c.Storage.DataDir }},
	{Key: "queues.rabbitmq.url", Env: "SLUICE_AMQP_URL", Secret: true, at: func(c *Config) *string { return &c.Queues.RabbitMQ.URL }},
	{Key: "server.log_format", Flag: "log-format", Env: "SLUICE_LOG_FORMAT", def: "text", at: func(c *Config) *string { return &c.Server.LogFormat }},
	{Key: "server.log_level", Flag: "log-level", Env: "SLUICE_LOG_LEVEL", def: "info", at: func(c *Config) *string { return &c.Server.LogLevel }},
	{Key: "metrics.token", Env: "SLUICE_METRICS_TOKEN", Secret: true, at: func(c *Config) *string { return &c.Metrics.Token }},
}

// EnvToken is a bearer token sluice serve takes from the environment: it
// replaces the secret of the file's token of the same name, or is added
// with its roles when the file has none of that name.
type EnvToken struct {
	Env   string
	Name  string
	Roles []Role
}

// EnvTokens lists the tokens read from the environment, named as in
// sluice.example.yaml.
var EnvTokens = []EnvToken{
	{Env: "SLUICE_ADMIN_TOKEN", Name: "ops", Roles: []Role{RoleAdmin}},
	{Env: "SLUICE_API_TOKEN", Name: "api", Roles: []Role{RoleLimiter, RoleProducer}},
	{Env: "SLUICE_WORKER_TOKEN", Name: "workers", Roles: []Role{RoleWorker}},
}

// WithoutServeEnv returns environ (as os.Environ gives it) without the
// variables sluice serve reads as settings (ServeSettings, EnvTokens):
// for a program that starts a server whose settings are its own flags
// and file, whatever its own environment holds.
func WithoutServeEnv(environ []string) []string {
	drop := map[string]bool{}
	for _, s := range ServeSettings {
		drop[s.Env] = true
	}
	for _, t := range EnvTokens {
		drop[t.Env] = true
	}
	var out []string
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); !drop[name] {
			out = append(out, kv)
		}
	}
	return out
}

// Origin says where the value of one setting came from.
type Origin struct {
	// Key is the file's key ("storage.postgres_url", "auth.tokens[ops]").
	Key string
	// Value is the value as it may be logged: "set" for a secret.
	Value string
	// From is "--flag", the environment variable's name, "file" or
	// "default".
	From string
}

// String formats o as "key: value (from source)".
func (o Origin) String() string { return fmt.Sprintf("%s: %s (from %s)", o.Key, o.Value, o.From) }

// ApplyServeOverrides sets on cfg each ServeSettings value given by flags
// (keyed by flag name) or, failing that, by lookup, and each EnvTokens
// token lookup gives. It returns where every setting with a value came
// from; cfg is checked by the caller (Validate).
func ApplyServeOverrides(cfg *Config, flags map[string]string, lookup func(string) (string, bool)) []Origin {
	cfg.applyDefaults()
	var out []Origin
	for _, s := range ServeSettings {
		dst := s.at(cfg)
		from := "file"
		if v := flags[s.Flag]; s.Flag != "" && v != "" {
			*dst, from = v, "--"+s.Flag
		} else if v, ok := lookup(s.Env); ok && v != "" {
			*dst, from = v, s.Env
		} else if *dst == s.def {
			from = "default"
		}
		if *dst == "" {
			continue
		}
		value := *dst
		if s.Secret {
			value = "set"
		}
		out = append(out, Origin{Key: s.Key, Value: value, From: from})
	}
	return append(out, applyEnvTokens(cfg, lookup)...)
}

// applyEnvTokens applies EnvTokens and reports each token's origin.
func applyEnvTokens(cfg *Config, lookup func(string) (string, bool)) []Origin {
	from := map[string]string{}
	for _, et := range EnvTokens {
		v, ok := lookup(et.Env)
		if !ok || v == "" {
			continue
		}
		from[et.Name] = et.Env
		i := slices.IndexFunc(cfg.Auth.Tokens, func(t Token) bool { return t.Name == et.Name })
		if i < 0 {
			cfg.Auth.Tokens = append(cfg.Auth.Tokens, Token{Name: et.Name, Roles: slices.Clone(et.Roles)})
			i = len(cfg.Auth.Tokens) - 1
		}
		cfg.Auth.Tokens[i].Token = v
	}
	out := make([]Origin, 0, len(cfg.Auth.Tokens))
	for _, t := range cfg.Auth.Tokens {
		src := from[t.Name]
		if src == "" {
			src = "file"
		}
		out = append(out, Origin{Key: "auth.tokens[" + t.Name + "]", Value: rolesText(t.Roles), From: src})
	}
	return out
}

func rolesText(roles []Role) string {
	s := make([]string, len(roles))
	for i, r := range roles {
		s[i] = string(r)
	}
	return "roles " + strings.Join(s, "+")
}

// StorageOrigin describes where the jobs are kept and which setting chose
// that, as "postgres (from SLUICE_POSTGRES_URL)": the first of Redis and
// PostgreSQL set (Redis wins, as in OpenStores), else the embedded
// SQLite store in storage.data_dir.
func StorageOrigin(cfg *Config, origins []Origin) string {
	find := func(key string) (Origin, bool) {
		i := slices.IndexFunc(origins, func(o Origin) bool { return o.Key == key })
		if i < 0 {
			return Origin{}, false
		}
		return origins[i], true
	}
	if o, ok := find("storage.redis_url"); ok {
		return "redis (from " + o.From + ")"
	}
	if o, ok := find("storage.postgres_url"); ok {
		return "postgres (from " + o.From + ")"
	}
	o, _ := find("storage.data_dir")
	return fmt.Sprintf("embedded SQLite in %s (from %s)", cfg.Storage.DataDir, o.From)
}
