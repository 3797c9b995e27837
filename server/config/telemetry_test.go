package config

import (
	"strings"
	"testing"
)

func TestTelemetryAndJobWebhooksConfig(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, doc, want string // want: a path in the error; empty: valid
	}{
		{"off", ``, ""},
		{"otlp host:port", "telemetry: {otlp: {endpoint: 'collector:4318'}}", ""},
		{"otlp url grpc", "telemetry: {otlp: {endpoint: 'https://c.example:4317', protocol: grpc}}", ""},
		{"bad endpoint", "telemetry: {otlp: {endpoint: 'collector'}}", "telemetry.otlp.endpoint"},
		{"bad protocol", "telemetry: {otlp: {endpoint: 'c:1', protocol: thrift}}", "telemetry.otlp.protocol"},
		{"bad ratio", "telemetry: {sample_ratio: 2}", "telemetry.sample_ratio"},
		{"job hooks", "webhooks: {jobs: {secret: s, max_result_bytes: -1, public_url: 'https://s.example', tenant_secrets: {acme: k}}}", ""},
		{"bad result bytes", "webhooks: {jobs: {max_result_bytes: -2}}", "webhooks.jobs.max_result_bytes"},
		{"bad public url", "webhooks: {jobs: {public_url: 'sluice.example'}}", "webhooks.jobs.public_url"},
		{"secret with space", "webhooks: {jobs: {tenant_secrets: {acme: 'a b'}}}", "webhooks.jobs.tenant_secrets"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.doc), "t.yaml")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error at %s", c.name, err, c.want)
		}
	}
	var tel Telemetry
	if tel.TracingOn() || tel.Service() != "sluice" || tel.Ratio() != 1 {
		t.Errorf("zero Telemetry: on %v, service %q, ratio %g; want off, sluice, 1", tel.TracingOn(), tel.Service(), tel.Ratio())
	}
	if got := (JobWebhooks{}).ResultLimit(); got != DefaultMaxResultBytes {
		t.Errorf("default result limit %d, want %d", got, DefaultMaxResultBytes)
	}
}
