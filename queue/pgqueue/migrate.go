package pgqueue

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/migrations"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// schemaMark stands for the quoted schema name in the migration files and
// in every query (see qualify).
const schemaMark = "__schema__"

// migration is one numbered schema step, from migrations/NNNN_name.sql.
type migration = migrations.Migration

func migrationList() ([]migration, error) {
	return migrations.Load(migrationFS, "migrations", "pgqueue")
}

// SchemaVersion is the schema version this build migrates to.
func SchemaVersion() int {
	ms, err := migrationList()
	if err != nil {
		return 0
	}
	return migrations.Latest(ms)
}

// qualify puts the quoted schema name in place of its mark in text.
func qualify(text, schema string) string {
	return strings.ReplaceAll(text, schemaMark, pgx.Identifier{schema}.Sanitize())
}

// Migrate brings the schema named by opts.Schema (default "sluice") in the
// database at url to this build's version, as Open does unless
// Options.SkipMigrate: the step for operators who migrate by hand before
// starting workers. It is safe to run from many processes at once.
func Migrate(ctx context.Context, url string, opts Options) error {
	schema, err := schemaOf(opts)
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("pgqueue: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return migrateOn(ctx, conn, schema)
}

// beginner is what the migrations run on: a pool or one connection.
type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// migrateOn applies every migration the schema has not had in one
// transaction that holds an advisory lock on the schema's name, so
// processes opening the store at once apply each step once, and a crash
// mid-way leaves the schema as it was. A schema newer than this build is
// refused rather than misread.
func migrateOn(ctx context.Context, db beginner, schema string) error {
	ms, err := migrationList()
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "sluice.migrate."+schema); err != nil {
			return err
		}
		ddl := qualify(`CREATE SCHEMA IF NOT EXISTS __schema__;
			CREATE TABLE IF NOT EXISTS __schema__.schema_migrations (
				version    integer PRIMARY KEY,
				name       text NOT NULL,
				applied_at timestamptz NOT NULL DEFAULT now())`, schema)
		if _, err := tx.Exec(ctx, ddl); err != nil {
			return err
		}
		cur, err := versionOf(ctx, tx, schema)
		if err != nil {
			return err
		}
		if latest := ms[len(ms)-1].Version; cur > latest {
			return fmt.Errorf("schema %q is at version %d, newer than this build (%d)", schema, cur, latest)
		}
		applied, err := appliedVersions(ctx, tx, schema)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if applied[m.Version] {
				continue
			}
			if _, err := tx.Exec(ctx, qualify(m.SQL, schema)); err != nil {
				return fmt.Errorf("migration %s: %w", m.Name, err)
			}
			if _, err := tx.Exec(ctx, qualify(`INSERT INTO __schema__.schema_migrations (version, name) VALUES ($1, $2)`, schema),
				m.Version, m.Name); err != nil {
				return fmt.Errorf("migration %s: %w", m.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("pgqueue: migrate: %w", err)
	}
	return nil
}

// appliedVersions reads the migrations the schema has: a build may bring
// one numbered below the schema's version (numbers are handed out ahead),
// and it is applied then.
func appliedVersions(ctx context.Context, tx pgx.Tx, schema string) (map[int]bool, error) {
	rows, err := tx.Query(ctx, qualify(`SELECT version FROM __schema__.schema_migrations`, schema))
	if err != nil {
		return nil, err
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	out := make(map[int]bool, len(vs))
	for _, v := range vs {
		out[v] = true
	}
	return out, err
}

// versionOf reads the schema's version: 0 before the first migration.
func versionOf(ctx context.Context, tx pgx.Tx, schema string) (int, error) {
	var v int
	err := tx.QueryRow(ctx, qualify(`SELECT coalesce(max(version), 0) FROM __schema__.schema_migrations`, schema)).Scan(&v)
	return v, err
}

// ErrSchemaVersion is matched by the error of Open with
// Options.SkipMigrate when the schema is not at this build's version.
var ErrSchemaVersion = errors.New("pgqueue: schema version mismatch")

// checkVersion refuses a schema not at this build's version.
func checkVersion(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	var v, n int
	err := pool.QueryRow(ctx, qualify(`SELECT coalesce(max(version), 0), count(*) FROM __schema__.schema_migrations`, schema)).Scan(&v, &n)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000") { // undefined table or schema
		v, err = 0, nil
	}
	if err != nil {
		return fmt.Errorf("pgqueue: read schema version: %w", err)
	}
	if ms, _ := migrationList(); v == SchemaVersion() && n < len(ms) {
		return fmt.Errorf("%w: schema %q lacks %d of this build's migrations (run Migrate)", ErrSchemaVersion, schema, len(ms)-n)
	}
	if want := SchemaVersion(); v != want {
		return fmt.Errorf("%w: schema %q is at version %d, this build needs %d (run Migrate)", ErrSchemaVersion, schema, v, want)
	}
	return nil
}
