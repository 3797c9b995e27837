package flow_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/flow"
)

// TestTripAfter checks that the breaker trips after the configured number
// of blocked failures instead of the default five.
func TestTripAfter(t *testing.T) {
	t.Parallel()
	for _, trip := range []int{1, 2} {
		u := &upstream{page: func(int64) string { return consentPage }}
		res, err := flow.Sweep(context.Background(), items(20), u.price,
			flow.TripAfter(trip), flow.SweepMapOptions(flow.Workers(1)), flow.SweepLogger(quietLogger()))
		if !errors.Is(err, flow.ErrBlocked) || !res.Tripped || res.Attempted != trip {
			t.Errorf("TripAfter(%d): tripped %v after %d attempts, err %v; want tripped after %d", trip, res.Tripped, res.Attempted, err, trip)
		}
	}
}

// TestWithClassifier checks that a classifier replaces Classify: here a
// 503 is final, so it is returned without a retry.
func TestWithClassifier(t *testing.T) {
	t.Parallel()
	up := &script{statuses: []int{http.StatusServiceUnavailable, http.StatusOK}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	final := func(*http.Response, error) flow.Class { return flow.Done }
	// A microsecond backoff on the real clock: without the classifier the
	// 503 would be retried at once and the test would see two calls.
	p := flow.Policy{Attempts: 2, Backoff: time.Microsecond, Jitter: -1}
	rt := flow.Transport(http.DefaultTransport, flow.WithRetry(p), flow.WithClassifier(final))
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || up.calls() != 1 {
		t.Errorf("status %d after %d calls; want the 503 after one call", resp.StatusCode, up.calls())
	}
}

// TestSharedBudgetAccessors checks what a shared budget says of itself.
func TestSharedBudgetAccessors(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Unix(1_700_000_000, 0))
	b := sharedBudget(t, memStore(t, fc), fc, "search-api", 7, time.Second)
	if b.Name() != "search-api" || b.Capacity() != 7 {
		t.Errorf("Name, Capacity = %q, %d; want search-api, 7", b.Name(), b.Capacity())
	}
}
