package budget_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/budget"
)

func TestAdaptive(t *testing.T) {
	forEachStore(t, func(t *testing.T, e env) {
		cfg := budget.Config{
			Limits:   budget.Limits{Requests: budget.Rate{Quota: 10, Window: time.Second, Burst: 1}},
			Adaptive: budget.Adaptive{Min: 0.2, Increase: 0.25},
		}
		b := e.budgets(t, map[string]budget.Config{"up": cfg})
		c := claim("", map[string]budget.Cost{"up": {}})
		mustAdmit(t, b, c)
		if h := mustHold(t, b, c); h.RetryAfter != 100*time.Millisecond {
			t.Fatalf("at the configured rate: hold %v, want 100ms", h.RetryAfter)
		}
		// A burst of refusals halves the rate once per second, down to Min.
		steps := []float64{0.5, 0.5, 0.25, 0.2}
		for i, want := range steps {
			if i == 2 || i == 3 {
				e.clk.Advance(time.Second)
			}
			got, err := b.Adapt("up", true)
			if err != nil || got != want {
				t.Fatalf("refusal %d: factor %v, %v; want %v", i, got, err, want)
			}
		}
		e.clk.Advance(time.Second)
		mustAdmit(t, b, c)
		// 10/s at 0.2 is 2/s: 500ms between requests.
		if h := mustHold(t, b, c); h.RetryAfter != 500*time.Millisecond {
			t.Errorf("at factor 0.2: hold %v, want 500ms", h.RetryAfter)
		}
		st, _ := b.Status(context.Background(), "up", "")
		if st.Factor != 0.2 {
			t.Errorf("Status.Factor = %v, want 0.2", st.Factor)
		}
		// Successes add 0.25 back at most once a second, up to 1.
		for i, want := range []float64{0.45, 0.45, 0.7, 0.95, 1, 1} {
			if i != 1 {
				e.clk.Advance(time.Second)
			}
			if got, _ := b.Adapt("up", false); got < want-1e-9 || got > want+1e-9 {
				t.Fatalf("success %d: factor %v, want %v", i, got, want)
			}
		}
		// Learn from a 429 slows it down too.
		e.clk.Advance(time.Second)
		if _, err := b.Learn(context.Background(), "up", budget.Hint{Limited: true}); err != nil {
			t.Fatal(err)
		}
		if f := b.Factor("up"); f != 0.5 {
			t.Errorf("factor after a learned 429 = %v, want 0.5", f)
		}
	})
}

func TestAdaptiveOff(t *testing.T) {
	forEachStore(t, func(t *testing.T, e env) {
		b := e.budgets(t, map[string]budget.Config{"up": {Limits: budget.Limits{Requests: budget.PerSecond(1)}}})
		if f, err := b.Adapt("up", true); err != nil || f != 1 {
			t.Errorf("Adapt on a budget without Adaptive = %v, %v; want 1", f, err)
		}
	})
	if err := (budget.Adaptive{Decrease: 0.5}).Validate(); err == nil {
		t.Errorf("Adaptive without Min: valid, want an error")
	}
	if err := (budget.Adaptive{Min: 0.1, Decrease: 1}).Validate(); err == nil {
		t.Errorf("Adaptive.Decrease 1: valid, want an error")
	}
}
