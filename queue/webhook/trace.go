package webhook

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/queue"
)

// tracerName is the instrumentation scope of the dispatcher's spans.
const tracerName = "github.com/sluicehq/sluice/queue/webhook"

// startSpan starts the span of one delivery attempt, continuing the trace
// of the job's enqueue when the event's job carried one (trace is its
// JobSpec.Trace). Without a tracer it returns ctx and a no-op end.
func (d *Dispatcher) startSpan(ctx context.Context, e queue.Event, s Subscription, tc string) (context.Context, func(status int, err error)) {
	if d.tracer == nil {
		return ctx, func(int, error) {}
	}
	if tc != "" {
		ctx = extractTrace(ctx, tc)
	}
	ctx, span := d.tracer.Start(ctx, "sluice.webhook.deliver", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("sluice.event.type", string(e.Type)),
			attribute.String("sluice.event.id", e.ID),
			attribute.String("sluice.job.id", e.JobID),
			attribute.String("sluice.webhook.subscription", s.Name),
		))
	return ctx, func(status int, err error) {
		if status != 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", status))
		}
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

// extractTrace returns ctx with the remote span context stored as a
// JobSpec.Trace (a traceparent, then a space and a tracestate).
func extractTrace(ctx context.Context, tc string) context.Context {
	parent, state, _ := strings.Cut(tc, " ")
	carrier := propagation.MapCarrier{"traceparent": parent}
	if state != "" {
		carrier["tracestate"] = state
	}
	return propagation.TraceContext{}.Extract(ctx, carrier)
}
