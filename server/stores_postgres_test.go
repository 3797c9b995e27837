package server

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/server/config"
)

// With storage.postgres_url alone the jobs are on Postgres, the counters
// in memory, and the stores' Ping (behind /readyz) checks Postgres.
func TestPostgresStores(t *testing.T) {
	u := pgtest.URL(t)
	cfg := config.Default()
	cfg.Storage.DataDir = t.TempDir()
	cfg.Storage.PostgresURL = u
	cfg.Storage.Postgres = config.PostgresTuning{Schema: pgtest.Schema(t, u), MaxConns: 2}
	st := openTestStores(t, cfg)
	if got, want := st.Kind, "embedded, jobs on postgres"; got != want {
		t.Errorf("Kind = %q, want %q", got, want)
	}
	if err := st.Ping(context.Background()); err != nil {
		t.Errorf("Ping: %v", err)
	}
	if got := st.Queue.Features().Name; got != "pgqueue" {
		t.Errorf("job backend %q, want pgqueue", got)
	}
}

// A queue placed on postgres beside the embedded default goes through the
// router to Postgres.
func TestPostgresPlacement(t *testing.T) {
	u := pgtest.URL(t)
	cfg := config.Default()
	cfg.Storage.DataDir = t.TempDir()
	cfg.Storage.PostgresURL = u
	cfg.Storage.Postgres = config.PostgresTuning{Schema: pgtest.Schema(t, u), MaxConns: 2}
	cfg.Queues.DefaultBackend = config.BackendEmbedded
	cfg.Queues.Backends = map[string]string{"ledger": config.BackendPostgres}
	h := storeHarness(t, cfg)
	runByID(t, h, "ledger")
	runByID(t, h, "other")
}

// A Postgres that cannot be reached fails the start, naming the host and
// never the password.
func TestPostgresUnreachable(t *testing.T) {
	cfg := config.Default()
	cfg.Storage.DataDir = t.TempDir()
	cfg.Storage.PostgresURL = "postgres://app:hunter2secret@127.0.0.1:1/app?connect_timeout=2"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	st, err := OpenStores(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err == nil {
		st.Close()
		t.Fatal("OpenStores on a closed port succeeded")
	}
	if msg := err.Error(); strings.Contains(msg, "hunter2secret") || !strings.Contains(msg, "storage.postgres_url (postgres://127.0.0.1:1/app)") {
		t.Errorf("error %q: want it to name storage.postgres_url and the host, and never the password", msg)
	}
}
