package pgtest

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Database creates a fresh database on the server of dbURL, named like a
// schema of Schema, drops it (disconnecting its clients) when t ends, and
// returns its URL. A test whose checks read the server's counters of one
// database (pg_stat_database) needs one no other test writes to. It
// skips t when the server refuses to create a database.
func Database(t testing.TB, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("pgtest: database URL: %v", err)
	}
	name := NewSchemaName()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Skipf("pgtest: cannot create a database of its own: %v", err)
	}
	t.Cleanup(func() { dropDatabase(t, dbURL, name) })
	u.Path = "/" + name
	return u.String()
}

// dropDatabase drops database name from the server of dbURL, ending its
// sessions first.
func dropDatabase(t testing.TB, dbURL, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Errorf("pgtest: drop database %s: %v", name, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Errorf("pgtest: drop database %s: %v", name, err)
	}
}
