package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/budget"
)

const budgetsDoc = `budgets:
  definitions:
    openai:
      requests: {quota: 500, window: 1m}
      units:
        tokens: {quota: 200000, window: 1m, burst: 50000}
      in_flight: 50
      per_tenant:
        requests: {quota: 60, window: 1m}
      share: {floor: 0.05, ceiling: 0.5}
      adaptive: {min: 0.25, every: 2s}
      lease: 5m
    search:
      requests: {quota: 10, window: 1s}
  queue_claims:
    summarise: {openai: {requests: 1, tokens: 1200}, search: {}}
  kind_claims:
    summarise-long: {openai: {tokens: 8000}}
`

func TestBudgetsParse(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(budgetsDoc), "sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defs := cfg.BudgetConfigs()
	want := budget.Config{
		Limits: budget.Limits{Requests: budget.PerMinute(500),
			Units: map[string]budget.Rate{"tokens": {Quota: 200000, Window: time.Minute, Burst: 50000}}, InFlight: 50},
		PerTenant: budget.Limits{Requests: budget.PerMinute(60)},
		Share:     budget.Share{Floor: 0.05, Ceiling: 0.5},
		Adaptive:  budget.Adaptive{Min: 0.25, Every: 2 * time.Second},
		LeaseTTL:  5 * time.Minute,
	}
	got := defs["openai"]
	if got.Limits.Requests != want.Limits.Requests || got.Limits.Units["tokens"] != want.Limits.Units["tokens"] ||
		got.Limits.InFlight != 50 || got.PerTenant.Requests != want.PerTenant.Requests || got.Share != want.Share || got.LeaseTTL != want.LeaseTTL || got.Adaptive != want.Adaptive {
		t.Errorf("openai = %+v, want %+v", got, want)
	}
	if len(defs) != 2 || defs["search"].Limits.Requests != budget.PerSecond(10) {
		t.Errorf("definitions = %+v, want openai and search at 10/s", defs)
	}
	for name, d := range defs {
		if err := d.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	c := cfg.Budgets.DefaultClaim("summarise", "summarise")
	if len(c) != 2 || c["openai"]["tokens"] != 1200 || c["openai"]["requests"] != 1 || c["search"] == nil {
		t.Errorf("DefaultClaim(summarise, summarise) = %v", c)
	}
	c = cfg.Budgets.DefaultClaim("summarise", "summarise-long")
	if c["openai"]["tokens"] != 8000 || len(c["openai"]) != 1 || c["search"] == nil {
		t.Errorf("DefaultClaim(summarise, summarise-long) = %v, want the kind's openai claim and the queue's search", c)
	}
	if c := cfg.Budgets.DefaultClaim("other", "other"); c != nil {
		t.Errorf("DefaultClaim of an unlisted queue and kind = %v, want nil", c)
	}
}

func TestBudgetsProblems(t *testing.T) {
	t.Parallel()
	def := func(body string) string { return "budgets:\n  definitions:\n    api:\n" + body }
	cases := []struct {
		name string
		doc  string
		line int
		path string
		msg  string
	}{
		{"empty", def("      lease: 1m\n"), 3, "budgets.definitions.api", "must set at least one limit"},
		{"quota", def("      requests: {quota: 0, window: 1s}\n"), 4, "budgets.definitions.api.requests.quota", "must be a positive integer"},
		{"window", def("      requests: {quota: 5}\n"), 4, "budgets.definitions.api.requests.window", "must be at least 1ms"},
		{"unit quota", def("      units:\n        tokens: {window: 1m}\n"), 5, "budgets.definitions.api.units.tokens.quota", "must be a positive integer"},
		{"unit name", def("      units:\n        Tokens: {quota: 1, window: 1m}\n"), 5, "budgets.definitions.api.units.Tokens", "unit names must match"},
		{"reserved unit", def("      units:\n        requests: {quota: 1, window: 1m}\n"), 5, "budgets.definitions.api.units.requests", "is reserved"},
		{"tenant burst", def("      per_tenant:\n        requests: {quota: 1, window: 1m, burst: -1}\n"), 5, "budgets.definitions.api.per_tenant.requests.burst", "must not be negative"},
		{"in flight", def("      in_flight: -2\n"), 4, "budgets.definitions.api.in_flight", "must not be negative"},
		{"floor", def("      requests: {quota: 5, window: 1s}\n      share: {floor: 2}\n"), 5, "budgets.definitions.api.share.floor", "must be a fraction"},
		{"ceiling", def("      requests: {quota: 5, window: 1s}\n      share: {floor: 0.5, ceiling: 0.1}\n"), 5, "budgets.definitions.api.share.ceiling", "must be at least share.floor"},
		{"adaptive", def("      requests: {quota: 5, window: 1s}\n      adaptive: {min: 0.1, decrease: 1}\n"), 5, "budgets.definitions.api.adaptive.decrease", "must be a fraction in (0, 1)"},
		{"lease", def("      in_flight: 2\n      lease: 1500us\n"), 5, "budgets.definitions.api.lease", "whole number of milliseconds"},
		{"unknown key", def("      request: {quota: 5, window: 1s}\n"), 4, "budgets.definitions.api.request", "unknown field"},
		{"bad name", "budgets:\n  definitions:\n    \"a b\":\n      in_flight: 1\n", 3, "budgets.definitions.a b", "budget name"},
		{"claim of an undefined budget", def("      in_flight: 1\n") + "  queue_claims:\n    q: {nope: {requests: 1}}\n", 6, "budgets.queue_claims.q.nope", "does not define"},
		{"claim of an unknown unit", def("      in_flight: 1\n") + "  kind_claims:\n    k:\n      api: {tokens: 5}\n", 7, "budgets.kind_claims.k.api.tokens", `limits no unit "tokens"`},
		{"negative claim", def("      in_flight: 1\n") + "  kind_claims:\n    k:\n      api: {requests: -1}\n", 7, "budgets.kind_claims.k.api.requests", "must not be negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), "sluice.yaml")
			var e *Error
			if !errors.As(err, &e) || len(e.Problems) == 0 {
				t.Fatalf("Parse = %v, want problems", err)
			}
			for _, got := range e.Problems {
				if got.Line == tc.line && got.Path == tc.path && strings.Contains(got.Message, tc.msg) {
					return
				}
			}
			t.Errorf("problems = %v; want line %d: %s: ...%s...", e.Problems, tc.line, tc.path, tc.msg)
		})
	}
}
