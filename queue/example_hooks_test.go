package queue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// A job may name its own receiver, as Firecrawl takes a webhook with each
// crawl: its events go there with its result and the metadata given, once
// a dispatcher with Config.Jobs (queue/webhook) runs on the backend's
// outbox, as `sluice serve` does.
func ExampleWebhook() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	b, _ := sqlitequeue.Open(filepath.Join(dir, "jobs.db"), sqlitequeue.Options{Outbox: true})
	defer b.Close()

	j, err := queue.NewClient(b).Enqueue(context.Background(), queue.JobSpec{
		Queue: "crawl", Kind: "page", Tenant: "acme",
		Webhook: &queue.Webhook{
			URL:      "https://hooks.example.com/crawl",
			Events:   []queue.EventType{queue.EventJobCompleted, queue.EventJobFailed},
			Metadata: json.RawMessage(`{"crawl_id":"c-42"}`),
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(j.Webhook.URL, string(j.Webhook.Metadata))
	// Output: https://hooks.example.com/crawl {"crawl_id":"c-42"}
}

// With a TracerProvider, each enqueue is a span below the caller's and
// the job carries its context (JobSpec.Trace) to the worker, whose
// handler's span continues the same trace.
func ExampleClientConfig_tracing() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	b, _ := sqlitequeue.Open(filepath.Join(dir, "jobs.db"), sqlitequeue.Options{})
	defer b.Close()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))

	ctx, span := tp.Tracer("app").Start(context.Background(), "signup")
	j, _ := queue.NewClient(b, queue.ClientConfig{TracerProvider: tp}).Enqueue(ctx, queue.JobSpec{Queue: "mail", Kind: "welcome"})
	span.End()

	stored := queue.ExtractTrace(context.Background(), j.Trace)
	fmt.Println(rec.Ended()[0].Name(), traceIDOf(stored) == span.SpanContext().TraceID().String())
	// Output: sluice.enqueue true
}

func traceIDOf(ctx context.Context) string {
	return trace.SpanContextFromContext(ctx).TraceID().String()
}
