package ratelimit

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// SpanDecide names the span TraceStore records for each decision.
const SpanDecide = "sluice.limit.decide"

// TraceStore returns s with each decision traced as a span (SpanDecide)
// below the caller's: how many limits, whether it was allowed, the
// longest retry-after. Keys are not recorded: they may hold a user's id
// or address. A nil tp returns s itself, so tracing off costs nothing.
func TraceStore(s Store, tp trace.TracerProvider) Store {
	if tp == nil {
		return s
	}
	return &tracedStore{s: s, t: tp.Tracer("github.com/sluicehq/sluice/ratelimit")}
}

type tracedStore struct {
	s Store
	t trace.Tracer
}

// Consume implements Store.
func (ts *tracedStore) Consume(ctx context.Context, reqs ...Request) (Decision, error) {
	ctx, span := ts.t.Start(ctx, SpanDecide, trace.WithAttributes(attribute.Int("sluice.limit.requests", len(reqs))))
	defer span.End()
	d, err := ts.s.Consume(ctx, reqs...)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return d, err
	}
	span.SetAttributes(attribute.Bool("sluice.limit.allowed", d.Allowed))
	if !d.Allowed {
		span.SetAttributes(attribute.Int64("sluice.limit.retry_after_ms", d.RetryAfter.Milliseconds()))
	}
	return d, nil
}

// Unwrap returns the traced store, so its optional parts stay reachable
// through Facet.
func (ts *tracedStore) Unwrap() Store { return ts.s }
