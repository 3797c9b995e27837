package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watcher holds the current Config of a file and swaps in each valid new
// version when the file changes. An invalid version is logged and
// rejected; the previous Config stays.
type Watcher struct {
	path     string
	current  atomic.Pointer[Config]
	logger   *slog.Logger
	onChange func(*Config) error
	debounce time.Duration

	mu       sync.Mutex // serialises reloads
	seen     []byte     // the file's text as last read, under mu
	reloads  atomic.Int64
	rejected atomic.Int64
}

// WatchOptions configures a Watcher.
type WatchOptions struct {
	// Logger receives reload and rejection lines; default slog.Default().
	Logger *slog.Logger
	// OnChange is called with a valid new Config before it is swapped in;
	// an error rejects the new Config (the old one stays).
	OnChange func(*Config) error
	// Debounce waits this long after a change before reading the file, so
	// an editor's several writes become one reload; default 100ms.
	Debounce time.Duration
}

// NewWatcher loads path and returns a Watcher holding it. Call Run to
// follow changes.
func NewWatcher(path string, opts WatchOptions) (*Watcher, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	cfg, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	w := &Watcher{path: path, logger: opts.Logger, onChange: opts.OnChange, debounce: opts.Debounce, seen: data}
	if w.logger == nil {
		w.logger = slog.Default()
	}
	if w.debounce <= 0 {
		w.debounce = 100 * time.Millisecond
	}
	w.current.Store(cfg)
	return w, nil
}

// Config returns the current Config. It is never nil and must not be
// modified.
func (w *Watcher) Config() *Config { return w.current.Load() }

// Reloads counts the new versions swapped in.
func (w *Watcher) Reloads() int64 { return w.reloads.Load() }

// Rejected counts the new versions turned down (invalid, or refused by
// OnChange).
func (w *Watcher) Rejected() int64 { return w.rejected.Load() }

// Reload reads the file now: a valid version is swapped in and returned;
// an invalid one is logged, counted and returned as an error, and the old
// Config stays.
func (w *Watcher) Reload() (*Config, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	data, err := os.ReadFile(w.path)
	var cfg *Config
	if err != nil {
		err = fmt.Errorf("config: %w", err)
	} else {
		w.seen = data
		cfg, err = Parse(data, w.path)
	}
	if err == nil && w.onChange != nil {
		err = w.onChange(cfg)
	}
	if err != nil {
		w.rejected.Add(1)
		w.logger.Error("config: new version rejected, keeping the current one", slog.String("file", w.path), slog.Any("error", err))
		return nil, err
	}
	w.current.Store(cfg)
	w.reloads.Add(1)
	w.logger.Info("config: reloaded", slog.String("file", w.path))
	return cfg, nil
}

// Run follows the file until ctx ends. It watches the file's directory, so
// an editor's rename-over and a Kubernetes ConfigMap's symlink swap are
// seen too. It returns nil when ctx ends.
func (w *Watcher) Run(ctx context.Context) error {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer fw.Close()
	if err := fw.Add(filepath.Dir(w.path)); err != nil {
		return err
	}
	target := filepath.Clean(w.path)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	// A change made after the file was loaded and before the watch began
	// sent no event: look once now.
	if w.changed() {
		timer.Reset(w.debounce)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fw.Events:
			if !ok {
				return errors.New("config: file watcher closed")
			}
			if filepath.Clean(ev.Name) == target || filepath.Base(ev.Name) == "..data" {
				timer.Reset(w.debounce)
			}
		case err, ok := <-fw.Errors:
			if !ok {
				return errors.New("config: file watcher closed")
			}
			w.logger.Warn("config: file watcher error", slog.Any("error", err))
		case <-timer.C:
			_, _ = w.Reload() // logged inside; the old config stays on error
		}
	}
}

// changed reports whether the file's text differs from what was last read
// (a file that cannot be read counts as changed: Reload will say why).
func (w *Watcher) changed() bool {
	data, err := os.ReadFile(w.path)
	w.mu.Lock()
	defer w.mu.Unlock()
	return err != nil || !bytes.Equal(data, w.seen)
}
