package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/queue/pgqueue"
)

// newMigrateCmd applies the Postgres job store's schema migrations, for
// operators who run them by hand (storage.postgres.skip_migrate).
func newMigrateCmd() *cobra.Command {
	var cfgPath, url, schema string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the Postgres job store's schema migrations",
		Long: `Apply the Postgres job store's schema migrations and exit.

The database is --postgres-url, else storage.postgres_url of --config (or
./sluice.yaml); the schema is --schema, else storage.postgres.schema, else
"sluice". Safe to run from several machines at once and again: each step is
applied once, in one transaction. A server started with
storage.postgres.skip_migrate: true refuses a schema that is not at its
version, so run this before rolling out a new release.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, _, err := loadServeConfig(cfgPath)
			if err != nil {
				return err
			}
			if url == "" {
				url = cfg.Storage.PostgresURL
			}
			if schema == "" {
				schema = cfg.Storage.Postgres.Schema
			}
			if url == "" {
				return errors.New("migrate: no database: give --postgres-url or storage.postgres_url")
			}
			if err := pgqueue.Migrate(cmd.Context(), url, pgqueue.Options{Schema: schema}); err != nil {
				return fmt.Errorf("migrate: %w", err) // pgx names the user and database, never the password
			}
			if schema == "" {
				schema = pgqueue.DefaultSchema
			}
			fmt.Fprintf(cmd.OutOrStdout(), "schema %s is at version %d\n", schema, pgqueue.SchemaVersion())
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfgPath, "config", "", "config file (default ./sluice.yaml if present)")
	fl.StringVar(&url, "postgres-url", "", "PostgreSQL URL, overriding storage.postgres_url")
	fl.StringVar(&schema, "schema", "", "schema, overriding storage.postgres.schema (default sluice)")
	return cmd
}
