package server

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/server/config"
)

const budgetsConfig = `
budgets:
  definitions:
    openai:
      requests: {quota: 500, window: 1m}
      units:
        tokens: {quota: 200000, window: 1m}
      in_flight: 50
      per_tenant:
        requests: {quota: 60, window: 1m}
`

// The budget routes report what claims used, close a budget, and follow
// a reload of the config's budgets.
func TestBudgetRoutes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, budgetsConfig, false)
	c := newRespCheck(t, h)
	a, err := h.srv.budgets.Admit(context.Background(), budget.Claim{Tenant: "acme", Costs: map[string]budget.Cost{"openai": {"tokens": 1200}}})
	if err != nil || !a.Admitted {
		t.Fatalf("Admit = %+v, %v", a, err)
	}

	r := c.call("GET", "/v1/budgets", 200, "")
	list := r.body["budgets"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["budget"] != "openai" {
		t.Fatalf("budgets = %s, want openai", r.raw)
	}
	r = c.call("GET", "/v1/budgets/{budget}?tenant=acme", 200, "", "openai")
	got := map[string]float64{}
	for _, l := range r.body["limits"].([]any) {
		m := l.(map[string]any)
		got[m["scope"].(string)+"/"+m["limit"].(string)] = m["used"].(float64)
	}
	if got["total/tokens"] != 1200 || got["total/requests"] != 1 || got["tenant/requests"] != 1 || got["total/in-flight"] != 1 {
		t.Errorf("used = %v, want 1200 tokens, 1 request (total and tenant), 1 in flight", got)
	}

	metrics := h.do("GET", "/metrics", "", "").raw
	for _, want := range []string{`sluice_budget_used{budget="openai",limit="tokens"} 1200`,
		`sluice_budget_room{budget="openai",limit="in-flight"} 49`, `sluice_budget_closed_seconds{budget="openai"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	c.call("POST", "/v1/budgets/{budget}/close", 200, `{"retry_after_ms": 2000}`, "openai")
	r = c.call("GET", "/v1/budgets/{budget}", 200, "", "openai")
	if ms := r.body["closed_for_ms"].(float64); ms <= 0 {
		t.Errorf("closed_for_ms = %v after a close, want positive", ms)
	}
	held, err := h.srv.budgets.Admit(context.Background(), budget.Claim{Costs: map[string]budget.Cost{"openai": {}}})
	if err != nil || held.Admitted || held.Hold.Limit != budget.LimitClosed {
		t.Errorf("Admit on the closed budget = %+v, %v; want held by the closure", held, err)
	}

	c.call("GET", "/v1/budgets/{budget}", 404, "", "nope")
	c.call("POST", "/v1/budgets/{budget}/close", 404, `{"retry_after_ms": 10}`, "nope")
	c.call("POST", "/v1/budgets/{budget}/close", 400, `{}`, "openai")
	c.call("POST", "/v1/budgets/{budget}/close", 400, `{"retry_after_ms": 5, "until": "2030-01-01T00:00:00Z"}`, "openai")

	next, err := config.Parse([]byte("budgets:\n  definitions:\n    search:\n      requests: {quota: 10, window: 1s}\n"), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.srv.Apply(next); err != nil {
		t.Fatal(err)
	}
	r = c.call("GET", "/v1/budgets", 200, "")
	if list := r.body["budgets"].([]any); len(list) != 1 || list[0].(map[string]any)["budget"] != "search" {
		t.Errorf("budgets after a reload = %s, want search alone", r.raw)
	}
	c.call("GET", "/v1/budgets/{budget}", 404, "", "openai")
}
