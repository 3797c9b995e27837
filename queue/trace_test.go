package queue_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// traceBackends opens every backend that stores a job's trace context.
func traceBackends(t *testing.T) map[string]func(t *testing.T) backend.Backend {
	return map[string]func(t *testing.T) backend.Backend{
		"sqlite": func(t *testing.T) backend.Backend {
			b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlitequeue.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			return b
		},
		"redis": func(t *testing.T) backend.Backend {
			opts, prefix, ok := redistest.Real(t)
			if !ok {
				opts = &redis.Options{Addr: miniredis.RunT(t).Addr()}
			}
			c := redis.NewClient(opts)
			b, err := redisqueue.New(c, redisqueue.Options{Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close(); c.Close() })
			return b
		},
	}
}

// TestTraceContinuesFromEnqueueToHandler enqueues under a caller's span
// and works the job: the enqueue span, the lease, the handler's span and
// its complete span all share the caller's trace id, and the handler's
// ctx carries its span.
func TestTraceContinuesFromEnqueueToHandler(t *testing.T) {
	for name, open := range traceBackends(t) {
		t.Run(name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			b := open(t)
			c := queue.NewClient(b, queue.ClientConfig{TracerProvider: tp})

			ctx, caller := tp.Tracer("app").Start(context.Background(), "signup")
			job, err := c.Enqueue(ctx, queue.JobSpec{Queue: "mail", Kind: "welcome"})
			caller.End()
			if err != nil {
				t.Fatal(err)
			}
			want := caller.SpanContext().TraceID()
			stored, err := c.Get(context.Background(), job.ID)
			if err != nil {
				t.Fatal(err)
			}
			if stored.Trace == "" {
				t.Fatal("the job was stored without its trace context")
			}

			seen := make(chan trace.SpanContext, 1)
			w := queue.NewWorker(b, queue.WorkerConfig{Queues: []string{"mail"}, TracerProvider: tp, CleanupEvery: -1})
			w.Handle("welcome", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
				seen <- trace.SpanContextFromContext(ctx)
				return nil, nil
			}))
			testutil.Start(t, w)
			got := <-seen
			if got.TraceID() != want {
				t.Fatalf("handler's trace id %s, want the enqueuing call's %s", got.TraceID(), want)
			}
			testutil.Eventually(t, "the complete span", func() bool { return hasSpan(rec, queue.SpanComplete) })
			for _, n := range []string{queue.SpanEnqueue, queue.SpanLease, queue.SpanWork, queue.SpanComplete} {
				s := span(rec, n)
				if s == nil {
					t.Fatalf("no %s span", n)
				}
				if s.SpanContext().TraceID() != want {
					t.Errorf("%s span in trace %s, want %s", n, s.SpanContext().TraceID(), want)
				}
			}
			if p := span(rec, queue.SpanWork).Parent(); p.SpanID() != span(rec, queue.SpanEnqueue).SpanContext().SpanID() {
				t.Errorf("work span's parent %s, want the enqueue span", p.SpanID())
			}
		})
	}
}

// TestNoTracerStoresNoTrace checks that a client without a tracer leaves
// the trace context out, so that tracing off costs no storage.
func TestNoTracerStoresNoTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	b := traceBackends(t)["sqlite"](t)
	ctx, caller := tp.Tracer("app").Start(context.Background(), "signup")
	defer caller.End()
	job, err := queue.NewClient(b).Enqueue(ctx, queue.JobSpec{Queue: "mail", Kind: "welcome"})
	if err != nil {
		t.Fatal(err)
	}
	if job.Trace != "" {
		t.Fatalf("Trace = %q, want none without a TracerProvider", job.Trace)
	}
}

func span(rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	for _, s := range rec.Ended() {
		if s.Name() == name {
			return s
		}
	}
	return nil
}

func hasSpan(rec *tracetest.SpanRecorder, name string) bool { return span(rec, name) != nil }

// BenchmarkEnqueueTracing is one Enqueue on SQLite with tracing off (no
// TracerProvider), on with the no-op provider, and on with the SDK
// sampling every trace (spans dropped at the end): what tracing costs the
// enqueue path. Compare the sub-benchmarks of one run.
func BenchmarkEnqueueTracing(b *testing.B) {
	providers := []struct {
		name string
		tp   trace.TracerProvider
	}{
		{"off", nil},
		{"noop", noop.NewTracerProvider()},
		{"sdk", sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(dropSpans{}))},
	}
	for _, p := range providers {
		b.Run(p.name, func(b *testing.B) {
			sb, err := sqlitequeue.Open(filepath.Join(b.TempDir(), "jobs.db"), sqlitequeue.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer sb.Close()
			c := queue.NewClient(sb, queue.ClientConfig{TracerProvider: p.tp})
			ctx := context.Background()
			spec := queue.JobSpec{Queue: "bench", Kind: "k"}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Enqueue(ctx, spec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// dropSpans is a span processor that keeps nothing.
type dropSpans struct{}

func (dropSpans) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (dropSpans) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (dropSpans) Shutdown(context.Context) error                  { return nil }
func (dropSpans) ForceFlush(context.Context) error                { return nil }
