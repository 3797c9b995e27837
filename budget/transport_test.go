package budget_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/flow"
)

// TestTransportLearns: one 429 with Retry-After, seen through
// flow.Transport, closes the budget for every process until then.
func TestTransportLearns(t *testing.T) {
	forEachStore(t, func(t *testing.T, e env) {
		cfg := budget.Config{Limits: budget.Limits{Requests: budget.PerSecond(10)}}
		b := e.budgets(t, map[string]budget.Config{"stub": cfg})
		other := e.budgetsOn(t, e.second, map[string]budget.Config{"stub": cfg})
		var calls atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
		}))
		defer srv.Close()
		var learnErr error
		rt := budget.Transport(srv.Client().Transport, b, budget.TransportOptions{
			Budget:  func(*http.Request) string { return "stub" },
			OnError: func(_ *http.Request, err error) { learnErr = err },
		})
		client := &http.Client{Transport: flow.Transport(rt, flow.WithRetry(flow.Policy{Attempts: 1}))}
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || calls.Load() != 1 || learnErr != nil {
			t.Fatalf("status %d after %d calls (learn error %v), want one 429", resp.StatusCode, calls.Load(), learnErr)
		}
		h := mustHold(t, other, claim("", map[string]budget.Cost{"stub": {}}))
		if h.Limit != budget.LimitClosed || h.RetryAfter != 2*time.Second {
			t.Errorf("hold after the 429 = %+v, want closed for 2s", h)
		}
		e.clk.Advance(2 * time.Second)
		mustAdmit(t, other, claim("", map[string]budget.Cost{"stub": {}}))
	})
}
