package queue

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue/backend"
)

// progressWriter coalesces one attempt's progress reports: a report is
// written at once when none was written in the last ProgressEvery, else it
// replaces the one waiting and a timer writes it when the interval ends.
// Writes are serialised, so the latest report is the last one written.
type progressWriter struct {
	set       backend.ProgressBackend // nil: the backend records no progress
	name      string                  // the backend's name, for the unsupported error
	id, token string
	clk       clock.Clock
	log       *slog.Logger

	write sync.Mutex // held while writing, so writes land in order

	mu      sync.Mutex
	last    time.Time    // when the latest write began
	pending *JobProgress // the report waiting for the interval to end
	armed   bool         // a timer will write pending
	stop    chan struct{}
	done    bool // the attempt ended: reports are refused
	lost    bool // a write found the lease gone
}

// newProgressWriter writes through f, the backend's features (read once
// per Run: a store builds them on each call).
func newProgressWriter(f backend.Features, id, token string, clk clock.Clock, log *slog.Logger) *progressWriter {
	return &progressWriter{set: f.Progress, name: f.Name, id: id, token: token, clk: clk, log: log, stop: make(chan struct{})}
}

// report writes p now or leaves it for the timer.
func (w *progressWriter) report(ctx context.Context, p JobProgress) error {
	if w.set == nil {
		return &UnsupportedError{Backend: w.name, Feature: CapProgress}
	}
	w.mu.Lock()
	switch {
	case w.lost:
		w.mu.Unlock()
		return ErrLeaseLost
	case w.done:
		w.mu.Unlock()
		return ErrLeaseLost
	}
	now := w.clk.Now()
	if w.pending == nil && !w.armed && now.Sub(w.last) >= ProgressEvery {
		w.last = now
		w.mu.Unlock()
		return w.put(ctx, p)
	}
	w.pending = &p
	if !w.armed {
		w.armed = true
		t := w.clk.NewTimer(max(ProgressEvery-now.Sub(w.last), 0))
		go w.await(t)
	}
	w.mu.Unlock()
	return nil
}

// await writes the pending report when t fires, unless the attempt ends
// first (close writes it then).
func (w *progressWriter) await(t clock.Timer) {
	select {
	case <-t.C():
	case <-w.stop:
		t.Stop()
		return
	}
	if err := w.flush(context.Background()); err != nil && !errors.Is(err, ErrLeaseLost) {
		w.log.Warn("queue: writing progress failed", "job", w.id, "err", err)
	}
}

// flush writes the pending report, if any.
func (w *progressWriter) flush(ctx context.Context) error {
	w.write.Lock()
	defer w.write.Unlock()
	w.mu.Lock()
	p := w.pending
	w.pending, w.armed = nil, false
	if p == nil || w.lost {
		w.mu.Unlock()
		return nil
	}
	w.last = w.clk.Now()
	w.mu.Unlock()
	return w.store(ctx, *p)
}

// put writes p, after any write under way.
func (w *progressWriter) put(ctx context.Context, p JobProgress) error {
	w.write.Lock()
	defer w.write.Unlock()
	return w.store(ctx, p)
}

func (w *progressWriter) store(ctx context.Context, p JobProgress) error {
	err := w.set.SetProgress(ctx, w.id, w.token, p)
	if errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrNotFound) {
		w.mu.Lock()
		w.lost = true
		w.mu.Unlock()
		return ErrLeaseLost
	}
	return err
}

// close ends the attempt's reporting: the pending report, if any, is
// written now, before the attempt's outcome, so the last one lands.
func (w *progressWriter) close() {
	if w == nil || w.set == nil {
		return
	}
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return
	}
	w.done = true
	close(w.stop)
	w.mu.Unlock()
	if err := w.flush(context.Background()); err != nil && !errors.Is(err, ErrLeaseLost) {
		w.log.Warn("queue: writing progress failed", "job", w.id, "err", err)
	}
}
