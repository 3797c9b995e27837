package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/config"
)

// TestRedisLogger: go-redis's lines come out through the server's logger
// (JSON here), at most one of a kind per redisLogEvery, the next saying
// how many were left out.
func TestRedisLogger(t *testing.T) {
	t.Parallel()
	var buf lockedBuffer
	l := newRedisLogger(slog.New(slog.NewJSONHandler(&buf, nil)))
	now := time.Unix(1_700_000_000, 0)
	l.now = func() time.Time { return now }
	ctx := context.Background()
	dial := "redis: connection pool: failed to dial after %d attempts: %v"
	l.Printf(ctx, dial, 5, "connection refused")
	l.Printf(ctx, dial, 5, "connection refused")
	l.Printf(ctx, "discarding bad PubSub connection: %v", "EOF")
	now = now.Add(redisLogEvery - time.Nanosecond)
	l.Printf(ctx, dial, 5, "connection refused")
	now = now.Add(time.Nanosecond)
	l.Printf(ctx, dial, 5, "connection refused")

	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		got = append(got, m)
	}
	want := []struct {
		msg     string
		skipped any
	}{
		{"redis: connection pool: failed to dial after 5 attempts: connection refused", nil},
		{"redis: discarding bad PubSub connection: EOF", nil},
		{"redis: connection pool: failed to dial after 5 attempts: connection refused", 2.0},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(got), len(want), buf.String())
	}
	for i, w := range want {
		if got[i]["msg"] != w.msg || got[i]["level"] != "WARN" || got[i]["similar_lines_left_out"] != w.skipped {
			t.Errorf("line %d = %v, want msg %q, WARN, left out %v", i, got[i], w.msg, w.skipped)
		}
	}
}

// TestStartLogNamesStores: the start line names the SQLite file.
func TestStartLogNamesStores(t *testing.T) {
	cfg := config.Default()
	cfg.Server.Listen = "127.0.0.1:0"
	cfg.Storage.DataDir = t.TempDir()
	var buf lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, RunOptions{Config: cfg, Logger: slog.New(slog.NewJSONHandler(&buf, nil)), Listening: func(string, string) { cancel() }})
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(buf.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "sluice: listening" {
			if want := filepath.Join(cfg.Storage.DataDir, "jobs.db"); m["sqlite"] != want {
				t.Errorf("start line %s: sqlite = %v, want %s", line, m["sqlite"], want)
			}
			return
		}
	}
	t.Errorf("no start line in:\n%s", buf.String())
}
