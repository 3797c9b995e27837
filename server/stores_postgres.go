package server

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/sluicehq/sluice/queue/pgqueue"
	"github.com/sluicehq/sluice/server/config"
)

// postgresOptions are the Postgres job store's options from
// storage.postgres.
func postgresOptions(cfg *config.Config) pgqueue.Options {
	t := cfg.Storage.Postgres
	return pgqueue.Options{Schema: t.Schema, MaxConns: int32(t.MaxConns), SkipMigrate: t.SkipMigrate,
		Outbox: outboxOn(cfg), Events: eventsOn(cfg)}
}

// openPostgres opens the Postgres job store, migrating its schema unless
// storage.postgres.skip_migrate. Unlike Redis, a Postgres that does not
// answer at start is an error: the schema must be checked (or migrated)
// before the first job is taken.
func openPostgres(ctx context.Context, cfg *config.Config) (*pgqueue.Store, error) {
	if cfg.Storage.PostgresURL == "" {
		return nil, errors.New("server: a queue is on postgres but storage.postgres_url is not set")
	}
	b, err := pgqueue.Open(ctx, cfg.Storage.PostgresURL, postgresOptions(cfg))
	if err != nil {
		// The URL may hold a password: name the host only.
		return nil, fmt.Errorf("server: storage.postgres_url (%s): %w", redactURL(cfg.Storage.PostgresURL), hidePassword(err, cfg.Storage.PostgresURL))
	}
	return b, nil
}

// hidePassword returns err with raw's password, if its text shows it,
// replaced.
func hidePassword(err error, raw string) error {
	u, perr := url.Parse(raw)
	if perr != nil || u.User == nil {
		return err
	}
	pw, ok := u.User.Password()
	if !ok || pw == "" {
		return err
	}
	return redacted{err: err, secret: pw}
}

// redacted is an error whose text never shows secret.
type redacted struct {
	err    error
	secret string
}

func (r redacted) Error() string {
	return strings.ReplaceAll(r.err.Error(), r.secret, "xxxxx")
}

func (r redacted) Unwrap() error { return r.err }
