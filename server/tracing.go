package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/config"
)

// openTracing returns the tracer provider of telemetry.otlp, exporting in
// batches, and the function that flushes and stops it; nil and a no-op
// when tracing is off.
func openTracing(ctx context.Context, t config.Telemetry) (trace.TracerProvider, func(context.Context) error, error) {
	if !t.TracingOn() {
		return nil, func(context.Context) error { return nil }, nil
	}
	exp, err := otlpExporter(ctx, t.OTLP)
	if err != nil {
		return nil, nil, fmt.Errorf("server: telemetry.otlp: %w", err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", t.Service()))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(t.Ratio()))),
	)
	return tp, tp.Shutdown, nil
}

// otlpExporter builds the exporter of o: HTTP/protobuf or gRPC, to a
// host:port or a URL.
func otlpExporter(ctx context.Context, o config.OTLP) (*otlptrace.Exporter, error) {
	isURL := strings.Contains(o.Endpoint, "://")
	if o.Protocol == "grpc" {
		opts := []otlptracegrpc.Option{otlptracegrpc.WithHeaders(o.Headers)}
		if isURL {
			opts = append(opts, otlptracegrpc.WithEndpointURL(o.Endpoint))
		} else {
			opts = append(opts, otlptracegrpc.WithEndpoint(o.Endpoint))
		}
		if o.Insecure {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithHeaders(o.Headers)}
	if isURL {
		opts = append(opts, otlptracehttp.WithEndpointURL(o.Endpoint))
	} else {
		opts = append(opts, otlptracehttp.WithEndpoint(o.Endpoint))
	}
	if o.Insecure {
		opts = append(opts, otlptracehttp.WithInsecure())
	}
	return otlptracehttp.New(ctx, opts...)
}

// w3c reads the traceparent and tracestate headers of API calls.
var w3c = propagation.TraceContext{}

// traced returns the request's context continuing the caller's trace
// (its traceparent header) when the server traces; as it is otherwise.
func (s *Server) traced(r *http.Request) context.Context {
	if s.tracer == nil {
		return r.Context()
	}
	return w3c.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
}

// callerTrace returns a valid traceparent (and tracestate) of r in the
// form of queue.JobSpec.Trace, or "". With tracing off, the server makes
// no span of its own but keeps the caller's context with the job, so the
// caller's trace still reaches the job's workers.
func callerTrace(r *http.Request) string {
	if r.Header.Get("traceparent") == "" {
		return ""
	}
	ctx := w3c.Extract(context.Background(), propagation.HeaderCarrier(r.Header))
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return "" // malformed: ignored, as W3C Trace Context says
	}
	return queue.InjectTrace(ctx)
}

// stampTraces gives specs the caller's trace context when the server does
// not trace (when it does, the Client's enqueue span does it).
func (s *Server) stampTraces(r *http.Request, specs []queue.JobSpec) {
	if s.tracer != nil {
		return
	}
	tc := callerTrace(r)
	if tc == "" {
		return
	}
	for i := range specs {
		if specs[i].Trace == "" {
			specs[i].Trace = tc
		}
	}
}

// splitTrace returns the traceparent and tracestate of a stored trace
// context.
func splitTrace(tc string) (parent, state string) {
	parent, state, _ = strings.Cut(tc, " ")
	return parent, state
}

// runTracing returns Run's tracer provider: RunOptions.TracerProvider, or
// the one telemetry configures (nil when off), and what flushes it at the
// end, within a bounded time.
func runTracing(ctx context.Context, cfg *config.Config, opts RunOptions) (trace.TracerProvider, func(), error) {
	if opts.TracerProvider != nil {
		return opts.TracerProvider, func() {}, nil
	}
	tp, shutdown, err := openTracing(ctx, cfg.Telemetry)
	if err != nil {
		return nil, nil, err
	}
	return tp, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = shutdown(sctx) // spans not exported by then are dropped
	}, nil
}
