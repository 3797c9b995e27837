package config

import (
	"net/url"
	"strings"
)

// Telemetry configures tracing with OpenTelemetry (telemetry:). The zero
// value leaves it off, at no cost: no spans are made and jobs carry no
// trace context of the server's own (a caller's traceparent is still
// stored with the job it enqueues, for its workers).
type Telemetry struct {
	// OTLP exports spans to an OpenTelemetry collector. Tracing is on when
	// its endpoint is set.
	OTLP OTLP `yaml:"otlp"`
	// ServiceName is the service.name of the spans; default "sluice".
	ServiceName string `yaml:"service_name"`
	// SampleRatio is the share of new traces recorded, from 0 (exclusive)
	// to 1; default 1 (every trace). A trace begun by a caller follows
	// the caller's sampling decision.
	SampleRatio float64 `yaml:"sample_ratio"`
}

// OTLP names the collector spans are exported to.
type OTLP struct {
	// Endpoint is the collector's address: host:port (such as
	// "otel-collector:4318"), or a URL (http:// is sent without TLS).
	// Empty: tracing off.
	Endpoint string `yaml:"endpoint"`
	// Protocol is "http" (OTLP over HTTP/protobuf, default, port 4318)
	// or "grpc" (port 4317).
	Protocol string `yaml:"protocol"`
	// Insecure sends without TLS; default false.
	Insecure bool `yaml:"insecure"`
	// Headers are sent with every export (an API key, say).
	Headers map[string]string `yaml:"headers"`
}

// DefaultServiceName is Telemetry.ServiceName's default.
const DefaultServiceName = "sluice"

// TracingOn reports whether spans are made and exported.
func (t Telemetry) TracingOn() bool { return t.OTLP.Endpoint != "" }

// Service returns ServiceName or its default.
func (t Telemetry) Service() string {
	if t.ServiceName == "" {
		return DefaultServiceName
	}
	return t.ServiceName
}

// Ratio returns SampleRatio or its default.
func (t Telemetry) Ratio() float64 {
	if t.SampleRatio == 0 {
		return 1
	}
	return t.SampleRatio
}

func (v *validator) telemetry(t *Telemetry) {
	base := []any{"telemetry"}
	if t.SampleRatio < 0 || t.SampleRatio > 1 {
		v.add(p(base, "sample_ratio"), "must be from 0 (default 1) to 1, got %g", t.SampleRatio)
	}
	o := t.OTLP
	switch o.Protocol {
	case "", "http", "grpc":
	default:
		v.add(p(base, "otlp", "protocol"), `must be "http" or "grpc", got %q`, o.Protocol)
	}
	if o.Endpoint == "" {
		return
	}
	if strings.Contains(o.Endpoint, "://") {
		u, err := url.Parse(o.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.add(p(base, "otlp", "endpoint"), "must be host:port or an http(s) URL, got %q", o.Endpoint)
		}
		return
	}
	v.hostPort(p(base, "otlp", "endpoint"), o.Endpoint)
}
