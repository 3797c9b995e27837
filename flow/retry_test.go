package flow_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/ratelimit"
)

// waitLog records the waits Retry announces through OnRetry.
type waitLog struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (w *waitLog) record(_ int, _ error, d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.waits = append(w.waits, d)
}

func (w *waitLog) last() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.waits[len(w.waits)-1]
}

func (w *waitLog) all() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.waits...)
}

// runRetry runs RetryValue on a goroutine and advances fc through each
// announced wait until it returns.
func runRetry[T any](fc *clock.Fake, p flow.Policy, fn func(context.Context) (T, error)) (T, []time.Duration, error) {
	return runRetryCtx(context.Background(), fc, p, fn)
}

func runRetryCtx[T any](ctx context.Context, fc *clock.Fake, p flow.Policy, fn func(context.Context) (T, error)) (T, []time.Duration, error) {
	var log waitLog
	p.Clock, p.OnRetry = fc, log.record
	type out struct {
		v   T
		err error
	}
	done := make(chan out, 1)
	go func() {
		v, err := flow.RetryValue(ctx, p, fn)
		done <- out{v, err}
	}()
	for {
		w := waiting(fc)
		select {
		case o := <-done:
			// Release the goroutine still watching for a timer.
			t := fc.NewTimer(time.Hour)
			<-w
			t.Stop()
			return o.v, log.all(), o.err
		case <-w:
			fc.Advance(log.last())
		}
	}
}

// waiting is closed once fc has a pending timer.
func waiting(fc *clock.Fake) <-chan struct{} {
	ch := make(chan struct{})
	go func() { fc.BlockUntil(1); close(ch) }()
	return ch
}

// failing returns fn that fails with err the first n calls, then returns
// "ok", and a counter of calls.
func failing(n int, err error) (func(context.Context) (string, error), func() int) {
	var mu sync.Mutex
	calls := 0
	return func(context.Context) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if calls <= n {
				return "", err
			}
			return "ok", nil
		}, func() int {
			mu.Lock()
			defer mu.Unlock()
			return calls
		}
}

var errFlaky = errors.New("flaky")

func TestRetryBacksOffExponentially(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(epoch)
	fn, calls := failing(2, errFlaky)
	v, waits, err := runRetry(fc, flow.Policy{Jitter: -1}, fn)
	if err != nil || v != "ok" || calls() != 3 {
		t.Fatalf("RetryValue = %q, %v after %d calls; want ok, nil after 3", v, err, calls())
	}
	want := []time.Duration{time.Second, 2 * time.Second}
	if !equalDurations(waits, want) {
		t.Fatalf("waits %v, want %v (the defaults)", waits, want)
	}
}

func TestRetryCapsAndJittersWaits(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(epoch)
	fn, _ := failing(100, errFlaky)
	p := flow.Policy{Attempts: 6, Backoff: time.Second, MaxBackoff: 3 * time.Second, Jitter: -1}
	_, waits, _ := runRetry(fc, p, fn)
	if want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second}; !equalDurations(waits, want) {
		t.Fatalf("capped waits %v, want %v", waits, want)
	}
	p.Jitter = 0 // the default, half of each wait random
	_, waits, _ = runRetry(fc, p, fn)
	full := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second}
	for i, w := range waits {
		if w < full[i]/2 || w > full[i] {
			t.Errorf("jittered wait %d = %s, want within [%s, %s]", i, w, full[i]/2, full[i])
		}
	}
}

func TestRetryGivesUpAfterAttempts(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(epoch)
	fn, calls := failing(100, errFlaky)
	_, _, err := runRetry(fc, flow.Policy{Attempts: 4}, fn)
	if !errors.Is(err, errFlaky) || !strings.Contains(err.Error(), "after 4 attempts") || calls() != 4 {
		t.Fatalf("error %v after %d calls; want errFlaky, \"after 4 attempts\", 4 calls", err, calls())
	}
}

func TestRetryStopsOnPermanentAndClassifier(t *testing.T) {
	t.Parallel()
	errBad := errors.New("bad request")
	tests := []struct {
		name string
		err  error
		p    flow.Policy
	}{
		{"permanent", flow.Permanent(errBad), flow.Policy{}},
		{"classifier", errBad, flow.Policy{Retryable: func(err error) bool { return !errors.Is(err, errBad) }}},
	}
	for _, tt := range tests {
		fc := clock.NewFake(epoch)
		fn, calls := failing(100, tt.err)
		_, _, err := runRetry(fc, tt.p, fn)
		if err != errBad || calls() != 1 {
			t.Errorf("%s: error %v after %d calls, want the bare %v after 1", tt.name, err, calls(), errBad)
		}
	}
	if flow.Permanent(nil) != nil || !flow.IsPermanent(flow.Permanent(errBad)) || flow.IsPermanent(errBad) {
		t.Error("Permanent(nil) must be nil and IsPermanent must see only marked errors")
	}
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	limited := &ratelimit.LimitedError{Scene: "s", Policy: "p", Decision: ratelimit.Decision{RetryAfter: 3 * time.Second}}
	tests := []struct {
		name string
		err  error
		want time.Duration
	}{
		{"RetryAfter", flow.RetryAfter(errFlaky, 7*time.Second), 7 * time.Second},
		{"beyond MaxBackoff", flow.RetryAfter(errFlaky, time.Minute), time.Minute},
		{"ratelimit.LimitedError", limited, 3 * time.Second},
	}
	for _, tt := range tests {
		fc := clock.NewFake(epoch)
		fn, _ := failing(1, tt.err)
		_, waits, err := runRetry(fc, flow.Policy{}, fn)
		if err != nil || len(waits) != 1 || waits[0] != tt.want {
			t.Errorf("%s: error %v, waits %v; want nil and [%s] exactly", tt.name, err, waits, tt.want)
		}
	}
}

func TestRetrySleepEndsOnCancel(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(epoch)
	fn, calls := failing(100, errFlaky)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := flow.RetryValue(ctx, flow.Policy{Clock: fc, Backoff: time.Hour}, fn)
		done <- err
	}()
	fc.BlockUntil(1) // sleeping after the first failure
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errFlaky) || calls() != 1 {
		t.Fatalf("error %v after %d calls; want Canceled and the last error after 1", err, calls())
	}
}

func TestRetryRefusesAWaitPastTheDeadline(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(epoch)
	fn, calls := failing(100, errFlaky)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := flow.RetryValue(ctx, flow.Policy{Clock: fc, Backoff: time.Hour, MaxBackoff: time.Hour}, fn)
	if !errors.Is(err, flow.ErrWouldExceedDeadline) || !errors.Is(err, errFlaky) || calls() != 1 {
		t.Fatalf("error %v after %d calls; want ErrWouldExceedDeadline and the last error after 1", err, calls())
	}
}

// TestRetriesCostBudget: with a budget of 2 per hour, the third attempt has
// to wait for the budget to refill.
func TestRetriesCostBudget(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(epoch)
	b, err := flow.NewBudget(2, time.Hour, flow.WithClock(fc))
	if err != nil {
		t.Fatal(err)
	}
	fn, calls := failing(100, errFlaky)
	done := make(chan error, 1)
	go func() {
		done <- flow.Retry(context.Background(), flow.Policy{Budget: b, Clock: fc, Backoff: time.Millisecond, Jitter: -1},
			func(ctx context.Context) error { _, err := fn(ctx); return err })
	}()
	fc.BlockUntil(1)
	fc.Advance(time.Millisecond) // backoff after attempt 1
	fc.BlockUntil(1)
	fc.Advance(2 * time.Millisecond) // backoff after attempt 2
	fc.BlockUntil(1)                 // attempt 3 now waits for the budget
	if c := calls(); c != 2 {
		t.Fatalf("%d calls before the budget ran dry, want 2", c)
	}
	fc.Advance(30 * time.Minute) // one call refills
	if err := <-done; !errors.Is(err, errFlaky) || calls() != 3 {
		t.Fatalf("error %v after %d calls, want errFlaky after 3", err, calls())
	}
	if b.TryTake(1) {
		t.Error("every attempt should have taken from the budget")
	}
}

func TestRetryDoesNotRetryPanics(t *testing.T) {
	t.Parallel()
	calls := 0
	err := flow.Retry(context.Background(), flow.Policy{}, func(context.Context) error {
		calls++
		panic("oops")
	})
	var pe *flow.PanicError
	if !errors.As(err, &pe) || pe.Value != "oops" || calls != 1 {
		t.Fatalf("error %v after %d calls, want *PanicError after 1", err, calls)
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
