package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

// A traced store keeps every optional part of the store it wraps: the
// limiter's in-flight limits, partial grants and resets work through it.
func TestTracedStoreKeepsFacets(t *testing.T) {
	mem := memlimit.New(memlimit.Options{})
	t.Cleanup(func() { mem.Close() })
	traced := ratelimit.TraceStore(mem, noop.NewTracerProvider())
	if _, ok := ratelimit.Facet[ratelimit.Acquirer](traced); !ok {
		t.Error("Acquirer hidden by the tracing wrapper")
	}
	if _, ok := ratelimit.Facet[ratelimit.Resetter](traced); !ok {
		t.Error("Resetter hidden by the tracing wrapper")
	}
	if _, ok := ratelimit.Facet[ratelimit.PartialConsumer](traced); !ok {
		t.Error("PartialConsumer hidden by the tracing wrapper")
	}
	if _, ok := ratelimit.Facet[ratelimit.Admitter](traced); !ok {
		t.Error("Admitter hidden by the tracing wrapper")
	}
	lim := ratelimit.Per(3, time.Minute)
	d, cerr := traced.Consume(context.Background(), ratelimit.Request{Key: "k", Limit: lim, Cost: 1})
	if cerr != nil || !d.Allowed {
		t.Fatalf("Consume through the wrapper: %+v, %v", d, cerr)
	}
}
