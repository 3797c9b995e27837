package flow_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
)

// upstream is a fake upstream that answers each fetch with page(n), n being
// the fetch's 1-based number, and counts fetches.
type upstream struct {
	fetches atomic.Int64
	page    func(n int64) string
}

const (
	goodPage    = "<html>prices: 120</html>"
	consentPage = "<html>Before you continue, accept our cookies</html>"
)

var errNoData = errors.New("page has no price data")

// price fetches one item the way a scraper would: a blank page is retried
// (it is occasionally transient), three blanks in a row mean a consent or
// block page and are reported as Blocked.
func (u *upstream) price(ctx context.Context, _ int) (string, error) {
	policy := flow.Policy{Attempts: 3, Backoff: time.Microsecond, Jitter: -1}
	page, err := flow.RetryValue(ctx, policy, func(context.Context) (string, error) {
		page := u.page(u.fetches.Add(1))
		if !strings.Contains(page, "prices:") {
			return "", errNoData
		}
		return page, nil
	})
	if errors.Is(err, errNoData) {
		return "", flow.Blocked(err)
	}
	return page, err
}

func items(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestSweepCap(t *testing.T) {
	t.Parallel()
	u := &upstream{page: func(int64) string { return goodPage }}
	res, err := flow.Sweep(context.Background(), items(94), u.price, flow.ItemName("date"))
	if !errors.Is(err, flow.ErrTooManyItems) || res != nil {
		t.Fatalf("94 items: %v, %v; want ErrTooManyItems and no result", res, err)
	}
	if !strings.Contains(err.Error(), "93") || !strings.Contains(err.Error(), "narrow") {
		t.Errorf("cap error %q should name 93 and say to narrow the range", err)
	}
	if n := u.fetches.Load(); n != 0 {
		t.Fatalf("%d fetches before the cap was checked, want 0", n)
	}

	res, err = flow.Sweep(context.Background(), items(93), u.price)
	if err != nil || len(res.Values()) != 93 || res.Warning != "" {
		t.Fatalf("exactly 93 items: %d values, warning %q, error %v; want 93, none, nil", len(res.Values()), res.Warning, err)
	}

	_, err = flow.Sweep(context.Background(), items(11), u.price, flow.MaxItems(10))
	if !errors.Is(err, flow.ErrTooManyItems) || !strings.Contains(err.Error(), "cap of 10") {
		t.Errorf("MaxItems(10) with 11 items: %v, want an ErrTooManyItems naming 10", err)
	}
}

// TestSweepBreakerBoundsFetches reproduces fli's numbers: every page is a
// consent page, each item costs up to 3 fetches, so the breaker must stop
// the sweep after at most (5 + workers) × 3 fetches whatever its length.
func TestSweepBreakerBoundsFetches(t *testing.T) {
	t.Parallel()
	for _, n := range []int{30, 61, 93} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			u := &upstream{page: func(int64) string { return consentPage }}
			res, err := flow.Sweep(context.Background(), items(n), u.price, flow.ItemName("date"))
			bound := int64((flow.DefaultTripAfter + flow.DefaultWorkers) * 3)
			if got := u.fetches.Load(); got > bound {
				t.Errorf("%d fetches for %d blocked dates, want at most %d", got, n, bound)
			}
			if !errors.Is(err, flow.ErrSweepFailed) || !errors.Is(err, flow.ErrBlocked) {
				t.Fatalf("error %v, want a SweepError carrying ErrBlocked", err)
			}
			for _, want := range []string{"blocked", "consent", "skipped", "page has no price data"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			if !res.Tripped || res.Skipped < n-(flow.DefaultTripAfter+flow.DefaultWorkers) || res.Attempted+res.Skipped != n {
				t.Errorf("tripped %v, attempted %d, skipped %d of %d", res.Tripped, res.Attempted, res.Skipped, n)
			}
			if int64(res.Attempted*3) != u.fetches.Load() {
				t.Errorf("%d attempted but %d fetches: skipped items must cost nothing", res.Attempted, u.fetches.Load())
			}
		})
	}
}

func TestSweepFirstSuccessDisarmsForGood(t *testing.T) {
	t.Parallel()
	u := &upstream{page: func(n int64) string {
		if n == 1 {
			return goodPage
		}
		return consentPage
	}}
	res, err := flow.Sweep(context.Background(), items(30), u.price,
		flow.SweepMapOptions(flow.Workers(1)), flow.SweepLogger(quietLogger()))
	if err != nil {
		t.Fatalf("one good date then blanks: %v, want a partial result", err)
	}
	if res.Tripped || res.Skipped != 0 || res.Failed != 29 || res.Results != 1 {
		t.Fatalf("tripped %v, skipped %d, failed %d, results %d; want false, 0, 29, 1", res.Tripped, res.Skipped, res.Failed, res.Results)
	}
	if got := u.fetches.Load(); got != 1+29*3 {
		t.Errorf("%d fetches, want %d: a disarmed sweep keeps its full retry budget", got, 1+29*3)
	}
}

func TestSweepOutcomes(t *testing.T) {
	t.Parallel()
	refused := fmt.Errorf("dial tcp 127.0.0.1:9: %w", syscall.ECONNREFUSED)
	type outcome = func(i int) (string, error)
	tests := []struct {
		name        string
		n           int
		fn          outcome
		wantErr     []string // substrings; nil means success
		wantWarning []string
	}{
		{"dead transport is loud, not empty", 30, func(int) (string, error) { return "", refused },
			[]string{"all 30 dates attempted failed", "connection refused (30)"}, nil},
		{"genuinely empty", 10, func(int) (string, error) { return "", flow.ErrNoResult }, nil, nil},
		{"no results, failed >= loaded", 10, func(i int) (string, error) {
			if i%2 == 0 {
				return "", flow.ErrNoResult
			}
			return "", refused
		}, []string{"no results from 5 loaded dates", "5 failed", "too few loaded"}, nil},
		{"no results, most loaded", 10, func(i int) (string, error) {
			if i < 8 {
				return "", flow.ErrNoResult
			}
			return "", refused
		}, nil, []string{"8 of 10 dates loaded, 2 failed, 0 skipped", "connection refused (2)"}},
		{"partial", 10, func(i int) (string, error) {
			if i == 3 {
				return "", context.DeadlineExceeded
			}
			return "ok", nil
		}, nil, []string{"partial sweep: 9 of 10 dates loaded, 1 failed", "deadline exceeded (1)"}},
		{"all good", 10, func(int) (string, error) { return "ok", nil }, nil, nil},
		{"panic fails one item", 3, func(i int) (string, error) {
			if i == 1 {
				panic("bad parser")
			}
			return "ok", nil
		}, nil, []string{"1 failed", "bad parser"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, nil))
			res, err := flow.Sweep(context.Background(), items(tt.n), func(_ context.Context, i int) (string, error) { return tt.fn(i) },
				flow.ItemName("date"), flow.SweepLogger(logger))
			checkSweepError(t, err, tt.wantErr)
			if res == nil {
				t.Fatal("nil result")
			}
			checkWarning(t, res.Warning, logs.String(), tt.wantWarning)
		})
	}
}

func checkSweepError(t *testing.T, err error, want []string) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("error %v, want nil", err)
		}
		return
	}
	var se *flow.SweepError
	if !errors.As(err, &se) || !errors.Is(err, flow.ErrSweepFailed) {
		t.Fatalf("error %v, want a *SweepError", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

func checkWarning(t *testing.T, warning, logs string, want []string) {
	t.Helper()
	if want == nil {
		if warning != "" || logs != "" {
			t.Errorf("warning %q, logs %q; want none", warning, logs)
		}
		return
	}
	if strings.Contains(warning, "\n") {
		t.Errorf("warning %q is more than one line", warning)
	}
	for _, w := range want {
		if !strings.Contains(warning, w) {
			t.Errorf("warning %q does not contain %q", warning, w)
		}
	}
	if n := strings.Count(logs, "level=WARN"); n != 1 {
		t.Errorf("warning logged %d times, want once:\n%s", n, logs)
	}
}

func TestSweepTimeoutsDoNotTripTheBreaker(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	res, err := flow.Sweep(context.Background(), items(20), func(context.Context, int) (string, error) {
		calls.Add(1)
		return "", context.DeadlineExceeded
	})
	if res.Tripped || calls.Load() != 20 {
		t.Fatalf("tripped %v after %d calls; timeouts must not count toward the breaker", res.Tripped, calls.Load())
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "all 20 items attempted failed") {
		t.Fatalf("error %v, want every item failing with the timeout named", err)
	}
}

func TestSweepStopsWhenContextEnds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	res, err := flow.Sweep(ctx, items(20), func(_ context.Context, i int) (string, error) {
		if i == 2 {
			cancel()
		}
		return "ok", nil
	}, flow.SweepMapOptions(flow.Workers(1)))
	if !errors.Is(err, context.Canceled) || res.Attempted != 3 || res.Items[3].Status != flow.Pending {
		t.Fatalf("error %v, attempted %d, item 3 %s; want Canceled, 3, pending", err, res.Attempted, res.Items[3].Status)
	}
}

func TestSweepEmpty(t *testing.T) {
	t.Parallel()
	res, err := flow.Sweep(context.Background(), nil, func(context.Context, int) (string, error) { return "", nil })
	if err != nil || len(res.Items) != 0 || res.Warning != "" {
		t.Fatalf("empty sweep: %+v, %v", res, err)
	}
}
