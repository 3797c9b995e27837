// Package testutil holds what the module's tests share: waiting on a
// condition with a generous deadline (Eventually), running a background
// component for the length of a test (Start), a log buffer several
// goroutines may write to (Buffer), and the switch between the default run
// and the full test matrix (Full, NeedFull, Size).
package testutil

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// Patience is how long Eventually waits before it fails the test: generous,
// for a loaded CI machine under the race detector. It bounds a wait so a
// broken test fails instead of hanging; it never asserts how fast anything is.
const Patience = 2 * time.Minute

// maxPoll is the longest pause between two calls of a condition.
const maxPoll = 20 * time.Millisecond

// Eventually calls cond until it holds and fails the test if it still does
// not after Patience, saying what it waited for. cond is either a func()
// bool, or a func() error that returns nil once the condition holds and
// otherwise what it saw instead: the failure message quotes the last one.
// cond runs on the caller's goroutine, so it may call t.Fatal.
func Eventually[C func() bool | func() error](t testing.TB, what string, cond C) {
	t.Helper()
	eventually(t, Patience, what, asCheck(cond))
}

// asCheck turns either kind of condition into one that returns nil when it
// holds.
func asCheck[C func() bool | func() error](cond C) func() error {
	switch c := any(cond).(type) {
	case func() bool:
		return func() error {
			if c() {
				return nil
			}
			return errNotYet
		}
	case func() error:
		return c
	}
	panic("unreachable")
}

// errNotYet is what a func() bool condition that does not hold saw.
var errNotYet = errors.New("testutil: the condition does not hold")

// eventually is Eventually with the deadline as an argument. The pause
// between calls doubles from a millisecond up to maxPoll, so a condition
// that holds soon is seen soon and a slow one is not polled in a tight loop.
func eventually(t testing.TB, patience time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(patience)
	pause := time.Millisecond
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			if err == errNotYet {
				t.Fatalf("timed out after %s waiting for %s", patience, what)
			}
			t.Fatalf("timed out after %s waiting for %s: %v", patience, what, err)
		}
		time.Sleep(pause)
		pause = min(2*pause, maxPoll)
	}
}

// Runner is a background component: Run works until ctx is cancelled
// (queue.Worker, webhook.Dispatcher, overload.Monitor, ...).
type Runner interface {
	Run(ctx context.Context) error
}

// Start runs r on its own goroutine until stop is called or the test ends.
// stop cancels Run's context, waits for Run to return and reports an error
// it returned; calling it again does nothing.
func Start(t testing.TB, r Runner) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-errc; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
