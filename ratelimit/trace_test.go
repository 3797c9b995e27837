package ratelimit_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

// TestTraceStoreRecordsDecisions: each decision is a span below the
// caller's, saying whether it was allowed; a nil provider adds nothing.
func TestTraceStoreRecordsDecisions(t *testing.T) {
	t.Parallel()
	mem := memlimit.New(memlimit.Options{SweepInterval: -1})
	defer mem.Close()
	if got := ratelimit.TraceStore(mem, nil); got != ratelimit.Store(mem) {
		t.Fatal("TraceStore(s, nil) wraps s; want s itself")
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	s := ratelimit.TraceStore(mem, tp)
	ctx, parent := tp.Tracer("app").Start(context.Background(), "request")
	req := ratelimit.Request{Key: "k", Limit: ratelimit.PerMinute(1), Cost: 1}
	for _, want := range []bool{true, false} {
		d, err := s.Consume(ctx, req)
		if err != nil || d.Allowed != want {
			t.Fatalf("Consume = %v, %v; want allowed %v", d.Allowed, err, want)
		}
	}
	parent.End()
	var allowed []bool
	for _, sp := range rec.Ended() {
		if sp.Name() != ratelimit.SpanDecide {
			continue
		}
		if sp.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("decision span's parent %s, want the caller's", sp.Parent().SpanID())
		}
		for _, a := range sp.Attributes() {
			if a.Key == attribute.Key("sluice.limit.allowed") {
				allowed = append(allowed, a.Value.AsBool())
			}
		}
	}
	if len(allowed) != 2 || !allowed[0] || allowed[1] {
		t.Fatalf("decision spans say allowed %v, want [true false]", allowed)
	}
}

// BenchmarkLimitTracing is one decision on the in-memory store with
// tracing off (no wrapper), on with the no-op provider, and on with the
// SDK sampling every trace into a recorder: what tracing costs a
// decision. Compare the sub-benchmarks of one run.
func BenchmarkLimitTracing(b *testing.B) {
	providers := []struct {
		name string
		s    func(ratelimit.Store) ratelimit.Store
	}{
		{"off", func(s ratelimit.Store) ratelimit.Store { return ratelimit.TraceStore(s, nil) }},
		{"noop", func(s ratelimit.Store) ratelimit.Store { return ratelimit.TraceStore(s, noop.NewTracerProvider()) }},
		{"sdk", func(s ratelimit.Store) ratelimit.Store {
			return ratelimit.TraceStore(s, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(discard{})))
		}},
	}
	for _, p := range providers {
		b.Run(p.name, func(b *testing.B) {
			mem := memlimit.New(memlimit.Options{SweepInterval: -1})
			defer mem.Close()
			s := p.s(mem)
			req := ratelimit.Request{Key: "bench", Limit: ratelimit.PerSecond(1 << 40), Cost: 1}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Consume(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// discard is a span processor that keeps nothing, so the benchmark
// measures making spans, not memory growing.
type discard struct{}

func (discard) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (discard) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (discard) Shutdown(context.Context) error                  { return nil }
func (discard) ForceFlush(context.Context) error                { return nil }
