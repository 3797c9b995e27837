package pgtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/pgtest"
)

// TestServerRestart starts a private server, writes a row, restarts the
// server after a crash (an immediate stop) and a clean one, and reads the
// row back each time on the same URL.
func TestServerRestart(t *testing.T) {
	srv := pgtest.StartServer(t)
	exec(t, srv.URL(), `CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)`)
	for _, mode := range []pgtest.StopMode{pgtest.Immediate, pgtest.Fast} {
		srv.Restart(mode)
		var v int
		query(t, srv.URL(), `SELECT v FROM kept`, &v)
		if v != 42 {
			t.Fatalf("after a %s restart, kept holds %d, want 42", mode, v)
		}
	}
	srv.Stop(pgtest.Fast)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if conn, err := pgx.Connect(ctx, srv.URL()); err == nil {
		conn.Close(ctx)
		t.Fatal("connected to a stopped server")
	}
	srv.Start()
	exec(t, srv.URL(), `SELECT 1`)
}

func exec(t *testing.T, url, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatal(err)
	}
}

func query(t *testing.T, url, sql string, dst any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, sql).Scan(dst); err != nil {
		t.Fatal(err)
	}
}
