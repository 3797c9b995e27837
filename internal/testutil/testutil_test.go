package testutil

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a testing.TB that records failures and cleanups instead of
// acting on them; Fatalf ends the calling goroutine as testing.T does.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	errs     []string
	fatal    bool
	cleanups []func()
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.mu.Lock()
	r.fatal = true
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

// failures returns what was reported, one line each.
func (r *recorder) failures() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.errs, "\n")
}

// onGoroutine runs f with r on a goroutine of its own (Fatalf ends it) and
// waits for it.
func (r *recorder) onGoroutine(f func()) {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	<-done
}

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	Eventually(t, "the third call", func() bool { calls++; return calls == 3 })
	if calls != 3 {
		t.Errorf("cond called %d times, want 3", calls)
	}
	calls = 0
	Eventually(t, "the second call", func() error {
		if calls++; calls < 2 {
			return errors.New("too early")
		}
		return nil
	})
	if calls != 2 {
		t.Errorf("cond called %d times, want 2", calls)
	}
}

func TestEventuallyFailsSayingWhatItWaitedFor(t *testing.T) {
	tests := []struct {
		name  string
		check func() error
		want  string
	}{
		{"bool", asCheck(func() bool { return false }), "timed out after 30ms waiting for the moon"},
		{"error", asCheck(func() error { return errors.New("saw 3 jobs") }), "timed out after 30ms waiting for the moon: saw 3 jobs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			start := time.Now()
			r.onGoroutine(func() { eventually(r, 30*time.Millisecond, "the moon", tc.check) })
			if got := r.failures(); got != tc.want || !r.fatal {
				t.Errorf("failure %q (fatal %v), want %q (fatal)", got, r.fatal, tc.want)
			}
			if waited := time.Since(start); waited < 30*time.Millisecond {
				t.Errorf("gave up after %s, before the 30ms deadline", waited)
			}
		})
	}
}

// runner is a Runner that blocks until its context ends and then returns err.
type runner struct {
	started chan struct{}
	err     error
	runs    int
}

func (r *runner) Run(ctx context.Context) error {
	r.runs++
	close(r.started)
	<-ctx.Done()
	return r.err
}

func TestStartRunsUntilStopped(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"clean", nil, ""},
		{"error", errors.New("boom"), "Run: boom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			w := &runner{started: make(chan struct{}), err: tc.err}
			stop := Start(r, w)
			<-w.started
			stop()
			stop()
			for _, c := range r.cleanups {
				c()
			}
			if got := r.failures(); got != tc.want {
				t.Errorf("failures %q, want %q", got, tc.want)
			}
			if w.runs != 1 {
				t.Errorf("Run called %d times, want 1", w.runs)
			}
		})
	}
}

func TestStartStopsWhenTheTestEnds(t *testing.T) {
	r := &recorder{TB: t}
	w := &runner{started: make(chan struct{})}
	Start(r, w)
	<-w.started
	if len(r.cleanups) != 1 {
		t.Fatalf("%d cleanups registered, want 1", len(r.cleanups))
	}
	r.cleanups[0]() // returns only once Run has returned
	if got := r.failures(); got != "" {
		t.Errorf("failures %q, want none", got)
	}
}
