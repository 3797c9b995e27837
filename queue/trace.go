package queue

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TracerName is the instrumentation scope of the queue's spans.
const TracerName = "github.com/sluicehq/sluice/queue"

// Span names. Each job's spans belong to the trace of the call that
// enqueued it: sluice.enqueue (a child of the caller's span), then, for
// every attempt, sluice.lease, sluice.work (the handler's span, whose
// context the handler gets) and sluice.complete or sluice.fail inside it.
const (
	SpanEnqueue  = "sluice.enqueue"
	SpanLease    = "sluice.lease"
	SpanWork     = "sluice.work"
	SpanComplete = "sluice.complete"
	SpanFail     = "sluice.fail"
)

// tracer traces a Client's or Worker's calls; the nil *tracer is off and
// costs one nil check per call.
type tracer struct{ t trace.Tracer }

// newTracer returns nil when tp is nil: tracing off.
func newTracer(tp trace.TracerProvider) *tracer {
	if tp == nil {
		return nil
	}
	return &tracer{t: tp.Tracer(TracerName)}
}

// w3c carries trace context in JobSpec.Trace, whatever the global
// propagator is, so that every language's worker can read it.
var w3c = propagation.TraceContext{}

// InjectTrace returns the trace context of ctx's span in the form of
// JobSpec.Trace (a traceparent, then a space and the tracestate when
// there is one), or "" when ctx has no valid span context.
func InjectTrace(ctx context.Context) string {
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	tp := c["traceparent"]
	if tp == "" {
		return ""
	}
	if ts := c["tracestate"]; ts != "" {
		return tp + " " + ts
	}
	return tp
}

// ExtractTrace returns ctx carrying, as its remote parent, the trace
// context stored in a JobSpec.Trace; ctx as it is when tc is empty or
// malformed.
func ExtractTrace(ctx context.Context, tc string) context.Context {
	if tc == "" {
		return ctx
	}
	parent, state, _ := strings.Cut(tc, " ")
	c := propagation.MapCarrier{"traceparent": parent}
	if state != "" {
		c["tracestate"] = state
	}
	return w3c.Extract(ctx, c)
}

// startEnqueue starts the enqueue span as a child of ctx's and stamps
// each spec that has no trace context with it. end records err.
func (t *tracer) startEnqueue(ctx context.Context, specs []JobSpec) (context.Context, func(error)) {
	if t == nil {
		return ctx, func(error) {}
	}
	attrs := []attribute.KeyValue{attribute.Int("sluice.jobs", len(specs))}
	if len(specs) > 0 {
		attrs = append(attrs, attribute.String("sluice.queue", specs[0].Queue), attribute.String("sluice.kind", specs[0].Kind))
	}
	ctx, span := t.t.Start(ctx, SpanEnqueue, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	tc := InjectTrace(ctx)
	for i := range specs {
		if specs[i].Trace == "" {
			specs[i].Trace = tc
		}
	}
	return ctx, func(err error) { endSpan(span, err) }
}

// lease records the lease of job, from start to now, in the job's trace.
func (t *tracer) lease(job *Job, worker string, start time.Time) {
	if t == nil {
		return
	}
	ctx := ExtractTrace(context.Background(), job.Trace)
	_, span := t.t.Start(ctx, SpanLease, trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(jobAttrs(job)...), trace.WithAttributes(attribute.String("sluice.worker", worker)))
	span.End()
}

// startWork starts the handler's span in the job's trace, below ctx's
// values (the lease, the cancellation).
func (t *tracer) startWork(ctx context.Context, job *Job) (context.Context, trace.Span) {
	if t == nil {
		return ctx, nil
	}
	ctx = ExtractTrace(ctx, job.Trace)
	return t.t.Start(ctx, SpanWork, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(jobAttrs(job)...))
}

// outcome records the outcome write inside the work span and ends both.
func (t *tracer) outcome(ctx context.Context, work trace.Span, o outcome, write func(context.Context) error) func(context.Context) error {
	if t == nil || work == nil {
		return write
	}
	name := SpanComplete
	if o.err != nil {
		name = SpanFail
		work.RecordError(o.err)
		work.SetStatus(codes.Error, o.err.Error())
	}
	wctx := trace.ContextWithSpan(ctx, work)
	return func(c context.Context) error {
		_, span := t.t.Start(wctx, name)
		err := write(c)
		endSpan(span, err)
		return err
	}
}

func jobAttrs(j *Job) []attribute.KeyValue {
	a := []attribute.KeyValue{
		attribute.String("sluice.job.id", j.ID), attribute.String("sluice.queue", j.Queue),
		attribute.String("sluice.kind", j.Kind), attribute.Int("sluice.attempt", j.Attempt),
	}
	if j.Tenant != "" {
		a = append(a, attribute.String("sluice.tenant", j.Tenant))
	}
	if j.Group != "" {
		a = append(a, attribute.String("sluice.group", j.Group))
	}
	return a
}

func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// enqueueTraced is EnqueueBatch inside an enqueue span, the specs
// stamped with its context (on a copy: the caller's specs are left as
// they are).
func (c *Client) enqueueTraced(ctx context.Context, specs []JobSpec) ([]Enqueued, error) {
	specs = append([]JobSpec(nil), specs...)
	ctx, end := c.tr.startEnqueue(ctx, specs)
	res, err := c.enqueueBatch(ctx, specs)
	end(err)
	return res, err
}

// endWork ends an attempt's span; nil (tracing off) is fine.
func endWork(s trace.Span) {
	if s != nil {
		s.End()
	}
}
