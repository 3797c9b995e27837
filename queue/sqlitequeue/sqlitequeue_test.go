package sqlitequeue_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

func open(t testing.TB, clk clock.Clock) *sqlitequeue.Backend {
	t.Helper()
	b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "queue.db"), sqlitequeue.Options{Clock: clk})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestConformance(t *testing.T) {
	queuetest.Run(t, func(t *testing.T, clk clock.Clock) backend.Backend { return open(t, clk) })
}

func TestReopenKeepsJobsAndVersion(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "q.db")
	b, err := sqlitequeue.Open(path, sqlitequeue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	j, err := queue.NewClient(b).Enqueue(context.Background(), queue.JobSpec{Queue: "q", Kind: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(context.Background(), j.ID); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("Get after Close: %v, want ErrClosed", err)
	}
	if _, err := queue.NewClient(b).Enqueue(context.Background(), queue.JobSpec{Queue: "q", Kind: "k"}); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("Enqueue after Close: %v, want ErrClosed", err)
	}
	b2 := reopen(t, path)
	got, err := b2.Get(context.Background(), j.ID)
	if err != nil || got.State != queue.StatePending {
		t.Fatalf("after reopen Get = %v, %v", got, err)
	}
	if v := userVersion(t, path); v != sqlitequeue.SchemaVersion() || v < 1 {
		t.Fatalf("user_version = %d, want %d", v, sqlitequeue.SchemaVersion())
	}
}

func TestRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "q.db")
	reopen(t, path).Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", sqlitequeue.SchemaVersion()+1)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if b, err := sqlitequeue.Open(path, sqlitequeue.Options{}); err == nil || !strings.Contains(err.Error(), "newer than this build") {
		if b != nil {
			b.Close()
		}
		t.Fatalf("Open of a newer schema: %v, want a refusal", err)
	}
}

// TestActiveNeedsLease checks the schema itself: no write, whatever its
// bug, can leave an active job without a lease or a lease on another state.
func TestActiveNeedsLease(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "q.db")
	reopen(t, path).Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cases := []struct {
		name, state, token string
		until              any
		ok                 bool
	}{
		{"active with lease", "active", "t", 1, true},
		{"active without token", "active", "", 1, false},
		{"active without deadline", "active", "t", nil, false},
		{"pending with lease", "pending", "t", 1, false},
		{"pending", "pending", "", nil, true},
		{"unknown state", "running", "", nil, false},
	}
	for _, c := range cases {
		var tok any
		if c.token != "" {
			tok = c.token
		}
		_, err := db.Exec(`INSERT INTO jobs (queue, kind, max_attempts, state, lease_token, lease_until, created_at, updated_at)
			VALUES ('q', 'k', 1, ?, ?, ?, 1, 1)`, c.state, tok, c.until)
		if (err == nil) != c.ok {
			t.Errorf("%s: insert error = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}

func reopen(t *testing.T, path string) *sqlitequeue.Backend {
	t.Helper()
	b, err := sqlitequeue.Open(path, sqlitequeue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func userVersion(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}
