package sqlitequeue

import (
	"context"
	"database/sql"
	"embed"
	"fmt"

	"github.com/sluicehq/sluice/internal/migrations"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one numbered schema step, from migrations/NNNN_name.sql.
type migration = migrations.Migration

func migrationList() ([]migration, error) {
	return migrations.Load(migrationFS, "migrations", "sqlitequeue")
}

// SchemaVersion is the schema version this build migrates to.
func SchemaVersion() int {
	ms, err := migrationList()
	if err != nil {
		return 0
	}
	return migrations.Latest(ms)
}

// migrate applies every migration newer than the file's user_version, each
// in its own transaction together with the version bump, so a crash
// mid-migration leaves the file at the previous version. A file newer than
// this build is refused rather than misread.
func migrate(ctx context.Context, db *sql.DB) error {
	ms, err := migrationList()
	if err != nil {
		return err
	}
	for _, m := range ms {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("sqlitequeue: migrate: %w", err)
		}
		var cur int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&cur); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("sqlitequeue: read schema version: %w", err)
		}
		if latest := ms[len(ms)-1].Version; cur > latest {
			_ = tx.Rollback()
			return fmt.Errorf("sqlitequeue: database schema version %d is newer than this build (%d)", cur, latest)
		}
		if cur >= m.Version {
			_ = tx.Rollback()
			continue
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("sqlitequeue: migration %s: %w", m.Name, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.Version)); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("sqlitequeue: migration %s: %w", m.Name, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("sqlitequeue: migration %s: %w", m.Name, err)
		}
	}
	return nil
}
