package server

import (
	"context"
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/config"
)

// callerParent is the traceparent an HTTP caller sends.
const (
	callerTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerParent  = "00-" + callerTraceID + "-00f067aa0ba902b7-01"
)

// TestTraceparentReachesTheHandler enqueues over HTTP with a traceparent
// header and works the job with a Go worker: the handler's span is in the
// caller's trace. With the server tracing, its enqueue span is there too,
// a child of the caller's span; without, the caller's context is stored
// as it came.
func TestTraceparentReachesTheHandler(t *testing.T) {
	for _, serverTraces := range []bool{true, false} {
		name := map[bool]string{true: "server traces", false: "server does not trace"}[serverTraces]
		t.Run(name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			opts := Options{}
			if serverTraces {
				opts.TracerProvider = tp
			}
			h := newOutboxHarness(t, config.Default(), opts)
			req, _ := http.NewRequest("POST", h.http.URL+"/v1/jobs", stringsReader(`{"queue":"mail","kind":"welcome"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("traceparent", callerParent)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("enqueue: %d", resp.StatusCode)
			}

			seen := make(chan trace.SpanContext, 1)
			w := queue.NewWorker(h.srv.backend, queue.WorkerConfig{Queues: []string{"mail"}, TracerProvider: tp, CleanupEvery: -1})
			w.Handle("welcome", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
				seen <- trace.SpanContextFromContext(ctx)
				return nil, nil
			}))
			testutil.Start(t, w)
			if got := (<-seen).TraceID().String(); got != callerTraceID {
				t.Fatalf("handler's trace id %s, want the caller's %s", got, callerTraceID)
			}
			enq := func() sdktrace.ReadOnlySpan {
				for _, s := range rec.Ended() {
					if s.Name() == queue.SpanEnqueue {
						return s
					}
				}
				return nil
			}()
			switch {
			case serverTraces && enq == nil:
				t.Fatal("no enqueue span")
			case serverTraces && (enq.SpanContext().TraceID().String() != callerTraceID || enq.Parent().SpanID().String() != "00f067aa0ba902b7"):
				t.Fatalf("enqueue span in trace %s under %s, want the caller's span", enq.SpanContext().TraceID(), enq.Parent().SpanID())
			case !serverTraces && enq != nil:
				t.Fatal("an enqueue span with tracing off")
			}
		})
	}
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
