// Package pgtest gives tests a real Postgres when one is configured: the
// database named by SLUICE_POSTGRES_URL, under a random schema that is
// dropped when the test ends, so parallel tests and repeated runs never
// see each other's tables. A test that must stop and start the server
// itself gets a private one instead (StartServer), when the Postgres
// binaries are installed.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL is the environment variable that names the real Postgres.
const EnvURL = "SLUICE_POSTGRES_URL"

// URL returns the database URL named by SLUICE_POSTGRES_URL, and skips t
// when it is unset.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(EnvURL)
	if url == "" {
		t.Skipf("%s is not set: no Postgres to test against", EnvURL)
	}
	return url
}

// Schema returns a fresh random schema name, "sluicetest_" and 12 hex
// digits, and drops that schema (if it was made) when t ends.
func Schema(t testing.TB, url string) string {
	t.Helper()
	name := NewSchemaName()
	t.Cleanup(func() { Drop(t, url, name) })
	return name
}

// NewSchemaName returns a fresh random schema name; the caller drops it.
func NewSchemaName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "sluicetest_" + hex.EncodeToString(b)
}

// Drop drops schema and everything in it from the database at url.
func Drop(t testing.TB, url, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Errorf("pgtest: drop %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		t.Errorf("pgtest: drop %s: %v", schema, err)
	}
}
