package config

import (
	"net/url"
	"regexp"
)

// PostgresTuning tunes the Postgres job store (pgqueue.Options). Zero
// fields are the library's defaults.
type PostgresTuning struct {
	// Schema is the Postgres schema holding the store's tables, created by
	// the migrations; default "sluice". Keep it apart from the
	// application's own tables.
	Schema string `yaml:"schema"`
	// MaxConns bounds the connection pool; default pgx's (the URL's
	// pool_max_conns, else 4 or the number of CPUs, whichever is more).
	MaxConns int `yaml:"max_conns"`
	// SkipMigrate leaves the schema as it is at start, for operators who
	// apply migrations themselves (`sluice migrate`); the server then
	// refuses to start on a schema of another version. Default false: the
	// server migrates at start.
	SkipMigrate bool `yaml:"skip_migrate"`
}

// pgSchemaName is what a schema name may be here: a plain identifier, so it
// never needs quoting in a config and never surprises in psql.
var pgSchemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// postgres checks storage.postgres_url and storage.postgres.
func (v *validator) postgres(s *Storage) {
	base := []any{"storage"}
	if s.PostgresURL != "" {
		u, err := url.Parse(s.PostgresURL)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" && u.Query().Get("host") == "" {
			// The URL may hold a password: say what is wrong, never echo it.
			v.add(p(base, "postgres_url"), "must be a postgres:// or postgresql:// URL such as postgres://sluice@127.0.0.1:5432/app")
		}
	}
	t := s.Postgres
	if t.Schema != "" && !pgSchemaName.MatchString(t.Schema) {
		v.add(p(base, "postgres", "schema"), "must be a lower-case identifier (letters, digits, _; at most 63), got %q", t.Schema)
	}
	if t.MaxConns < 0 || t.MaxConns > 10000 {
		v.add(p(base, "postgres", "max_conns"), "must be from 0 (default) to 10000, got %d", t.MaxConns)
	}
}
