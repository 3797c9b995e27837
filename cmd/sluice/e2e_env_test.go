package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/testutil"
)

// Tokens come from the environment, a flag wins over its variable, the
// start log says where each setting came from, and a reload of the file
// keeps the environment's tokens.
func TestServeEnvironment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "sluice.yaml")
	writeFile(t, path, e2eConfig)
	const admin = "env-admin-token-0123456789"
	// SLUICE_LISTEN and SLUICE_DATA_DIR would not start: the flags win.
	p := start(t, dir, []string{"SLUICE_ADMIN_TOKEN=" + admin, "SLUICE_LISTEN=not-an-address", "SLUICE_DATA_DIR=/proc/no-such-dir"})
	testutil.Eventually(t, "the settings line", func() bool { return strings.Contains(p.stderr.String(), "sluice: settings") })
	log := p.stderr.String()
	for _, want := range []string{
		`server.listen="127.0.0.1:0 (from --listen)"`,
		`auth.tokens[ops]="roles admin (from SLUICE_ADMIN_TOKEN)"`,
		`storage="embedded SQLite in ` + filepath.Join(dir, "data") + ` (from --data-dir)"`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("start log lacks %s:\n%s", want, log)
		}
	}
	whoami := func() answer { return p.do("GET", "/v1/whoami", admin, "") }
	if a := whoami(); a.status != 200 || a.body["name"] != "ops" {
		t.Fatalf("whoami with the environment's token = %d %s", a.status, a.raw)
	}
	if a := p.do("GET", "/v1/whoami", "", ""); a.status != 401 {
		t.Fatalf("whoami without a token = %d %s, want 401", a.status, a.raw)
	}
	writeFile(t, path, strings.Replace(e2eConfig, "quota: 1", "quota: 5", 1))
	testutil.Eventually(t, "the reload", func() bool { return strings.Contains(p.stderr.String(), "config: reloaded") })
	if a := whoami(); a.status != 200 || a.body["name"] != "ops" {
		t.Fatalf("whoami after a reload = %d %s, want the environment's token kept", a.status, a.raw)
	}
	if a := p.do("GET", "/v1/whoami", "", ""); a.status != 401 {
		t.Fatalf("whoami without a token after a reload = %d %s, want 401", a.status, a.raw)
	}
}

// SLUICE_POSTGRES_URL alone puts the jobs in Postgres: the enqueued job
// is a row of the schema's jobs table.
func TestServePostgresFromEnvironment(t *testing.T) {
	url := pgtest.URL(t)
	t.Parallel()
	dir := t.TempDir()
	schema := pgtest.Schema(t, url)
	writeFile(t, filepath.Join(dir, "sluice.yaml"), e2eConfig+"storage:\n  postgres: {schema: "+schema+"}\n")
	p := start(t, dir, []string{"SLUICE_POSTGRES_URL=" + url})
	testutil.Eventually(t, "the log to say postgres from SLUICE_POSTGRES_URL", func() bool {
		return strings.Contains(p.stderr.String(), `storage="postgres (from SLUICE_POSTGRES_URL)"`)
	})
	a := p.do("POST", "/v1/jobs", "", `{"queue":"envq","kind":"k"}`)
	id, _ := a.body["job"].(map[string]any)["id"].(string)
	if a.status != 201 || id == "" {
		t.Fatalf("enqueue = %d %s", a.status, a.raw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	q := fmt.Sprintf("SELECT count(*) FROM %s.jobs WHERE queue = 'envq'", pgx.Identifier{schema}.Sanitize())
	if err := conn.QueryRow(ctx, q).Scan(&n); err != nil || n != 1 {
		t.Fatalf("jobs in Postgres = %d (%v), want 1", n, err)
	}
}
