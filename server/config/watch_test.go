package config

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const goodA = "limits:\n  scenes:\n    s:\n      subject: [x]\n      policies: {p: {limits: [{quota: 1, window: 1s}]}}\n"
const goodB = "limits:\n  scenes:\n    s:\n      subject: [x]\n      policies: {p: {limits: [{quota: 7, window: 1s}]}}\n"
const bad = "limits:\n  scenes:\n    s:\n      subject: [x]\n      policies: {p: {limits: [{quota: 0, window: 1s}]}}\n"

// quota is the test policy's quota, or -1 when the loaded config has no
// such policy (a reload that read a file while it was being written).
func quota(c *Config) int64 {
	ls := c.Limits.Scenes["s"].Policies["p"].Limits
	if len(ls) == 0 {
		return -1
	}
	return ls[0].Quota
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestReloadKeepsOldOnInvalid(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	write(t, path, goodA)
	var logs syncBuf
	w, err := NewWatcher(path, WatchOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, bad)
	if _, err := w.Reload(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("reload of a bad file: err = %v, want ErrInvalid", err)
	}
	if got := quota(w.Config()); got != 1 {
		t.Errorf("after bad file quota = %d, want the old 1", got)
	}
	if !strings.Contains(logs.String(), "rejected") || !strings.Contains(logs.String(), "line 5") {
		t.Errorf("log = %q, want a rejection line naming line 5", logs.String())
	}
	write(t, path, goodB)
	if _, err := w.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := quota(w.Config()); got != 7 {
		t.Errorf("after good file quota = %d, want 7", got)
	}
	if w.Reloads() != 1 || w.Rejected() != 1 {
		t.Errorf("reloads, rejected = %d, %d; want 1, 1", w.Reloads(), w.Rejected())
	}
}

func TestOnChangeCanReject(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	write(t, path, goodA)
	w, err := NewWatcher(path, WatchOptions{
		Logger:   slog.New(slog.DiscardHandler),
		OnChange: func(*Config) error { return errors.New("storage cannot change at run time") },
	})
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, goodB)
	if _, err := w.Reload(); err == nil {
		t.Fatal("want OnChange's error")
	}
	if quota(w.Config()) != 1 {
		t.Error("old config must stay")
	}
}

func TestRunFollowsFileChanges(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	write(t, path, goodA)
	w, err := NewWatcher(path, WatchOptions{Logger: slog.New(slog.DiscardHandler), Debounce: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Start(t, w)

	// The watcher is registered asynchronously: keep rewriting until it is
	// seen, bounded by the test's deadline, never asserting how fast.
	// Written by rename, so the watcher never reads a half-written file.
	testutil.Eventually(t, "the bad file to be rejected", func() bool {
		tmp := path + ".tmp"
		write(t, tmp, bad)
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		return w.Rejected() > 0
	})
	if quota(w.Config()) != 1 {
		t.Fatal("bad file replaced the config")
	}
	// An editor's save: write a temp file and rename it over the original.
	testutil.Eventually(t, "the renamed file to be loaded", func() bool {
		tmp := path + ".tmp"
		write(t, tmp, goodB)
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		return quota(w.Config()) == 7
	})
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRunSeesChangeBeforeWatch: a change made after the file was loaded
// and before Run began watching it sends no event; Run still serves it.
func TestRunSeesChangeBeforeWatch(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	write(t, path, goodA)
	w, err := NewWatcher(path, WatchOptions{Logger: slog.New(slog.DiscardHandler), Debounce: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, goodB) // before Run: no watch yet
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	testutil.Eventually(t, "the change made before the watch to be served", func() bool { return quota(w.Config()) == 7 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}
