package config

import (
	"errors"
	"testing"
)

func TestMetricsValidation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, doc, path, msg string
		line                 int
	}{
		{"token short", "metrics:\n  token: short\n", "metrics.token", "must be at least 16 characters, got 5", 2},
		{"series negative", "metrics:\n  tenant_series: -1\n", "metrics.tenant_series", "must be from 0 (default 50) to 1000, got -1", 2},
		{"series too many", "metrics:\n  tenant_series: 1001\n", "metrics.tenant_series", "must be from 0 (default 50) to 1000, got 1001", 2},
		{"unknown key", "metrics:\n  tokens: x\n", "metrics.tokens", `unknown field "tokens" (known: tenant_series, token)`, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseEnv([]byte(tc.doc), "t.yaml", env(nil))
			var cerr *Error
			if !errors.As(err, &cerr) || len(cerr.Problems) != 1 {
				t.Fatalf("err = %v, want exactly one problem", err)
			}
			got := cerr.Problems[0]
			if got.Line != tc.line || got.Path != tc.path || got.Message != tc.msg {
				t.Errorf("got  line %d path %q msg %q\nwant line %d path %q msg %q", got.Line, got.Path, got.Message, tc.line, tc.path, tc.msg)
			}
		})
	}
}

func TestMetricsDefaultsAndEnv(t *testing.T) {
	t.Parallel()
	if got := Default().Metrics; got.Token != "" || got.TenantSeries != DefaultTenantSeries {
		t.Errorf("Default().Metrics = %+v, want no token and %d tenant series", got, DefaultTenantSeries)
	}
	cfg, err := ParseEnv([]byte("metrics:\n  token: ${M}\n  tenant_series: 10\n"), "t.yaml", env(map[string]string{"M": "0123456789abcdef-metrics"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Metrics.Token != "0123456789abcdef-metrics" || cfg.Metrics.TenantSeries != 10 {
		t.Errorf("Metrics = %+v", cfg.Metrics)
	}
}
