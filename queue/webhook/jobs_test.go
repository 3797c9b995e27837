package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
	"github.com/sluicehq/sluice/queue/webhook"
)

// outboxBackend is a backend with its outbox and tenant secrets.
type outboxBackend interface {
	backend.Backend
	backend.Outbox
	backend.TenantSecrets
}

// hookBackends opens each backend that keeps per-job webhooks, on clk.
func hookBackends() map[string]func(t *testing.T, clk clock.Clock) outboxBackend {
	return map[string]func(t *testing.T, clk clock.Clock) outboxBackend{
		"sqlite": func(t *testing.T, clk clock.Clock) outboxBackend { return openBackend(t, clk, true) },
		"redis": func(t *testing.T, clk clock.Clock) outboxBackend {
			opts, prefix, ok := redistest.Real(t)
			if !ok {
				opts = &redis.Options{Addr: miniredis.RunT(t).Addr()}
			}
			c := redis.NewClient(opts)
			b, err := redisqueue.New(c, redisqueue.Options{Prefix: prefix, Clock: clk, Outbox: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close(); c.Close() })
			return b
		},
	}
}

// delivery is one request a receiver got.
type delivery struct {
	header http.Header
	body   []byte
}

// recorder is a receiver that answers with the statuses given, in turn
// (200 once they run out), and keeps what it got.
type recorder struct {
	mu       sync.Mutex
	statuses []int
	got      []delivery
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.got = append(rc.got, delivery{r.Header.Clone(), body})
	if len(rc.statuses) > 0 {
		w.WriteHeader(rc.statuses[0])
		rc.statuses = rc.statuses[1:]
	}
}

func (rc *recorder) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

// finish enqueues spec, leases it and completes it with result.
func finish(t *testing.T, b backend.Backend, spec queue.JobSpec, result []byte) string {
	t.Helper()
	ctx := context.Background()
	j, err := queue.NewClient(b).Enqueue(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{spec.Queue}, WorkerID: "w", Max: 1, LeaseFor: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("Lease = %d jobs, %v", len(ls), err)
	}
	if err := b.Complete(ctx, j.ID, ls[0].Token, result); err != nil {
		t.Fatal(err)
	}
	return j.ID
}

// TestJobWebhookDelivered completes a job given a webhook with metadata:
// its receiver gets the event, the result and the metadata, signed with
// the tenant's secret; a failing receiver is tried again after the
// backoff, and the log has both attempts.
func TestJobWebhookDelivered(t *testing.T) {
	for name, open := range hookBackends() {
		t.Run(name, func(t *testing.T) {
			clk := clock.NewFake(epoch)
			b := open(t, clk)
			rc := &recorder{statuses: []int{http.StatusInternalServerError}}
			srv := newServer(t, rc.ServeHTTP)
			ctx := context.Background()
			if err := b.SetTenantSecret(ctx, "acme", "acme-secret"); err != nil {
				t.Fatal(err)
			}
			d := newDispatcher(t, b, webhook.Config{Clock: clk, Jobs: &webhook.JobHooks{Backend: b, Secret: "server-secret"}})

			id := finish(t, b, queue.JobSpec{Queue: "crawl", Kind: "page", Tenant: "acme", Webhook: &queue.Webhook{
				URL: srv.URL + "/hook", Metadata: json.RawMessage(`{"crawl":"c-1"}`), Headers: map[string]string{"X-Team": "t1"},
			}}, []byte(`{"title":"Home"}`))

			dispatch(t, d, 1) // the receiver answers 500
			if n := len(rc.deliveries()); n != 1 {
				t.Fatalf("receiver got %d requests, want 1", n)
			}
			dispatch(t, d, 0) // not due before its backoff
			clk.Advance(time.Minute)
			dispatch(t, d, 1)

			got := rc.deliveries()
			if len(got) != 2 {
				t.Fatalf("receiver got %d requests, want 2 (a retry)", len(got))
			}
			last := got[1]
			if err := webhook.Verify("acme-secret", last.header.Get(webhook.SignatureHeader), last.body, time.Minute, clk.Now()); err != nil {
				t.Fatalf("signature under the tenant's secret: %v", err)
			}
			if v := last.header.Get("X-Team"); v != "t1" {
				t.Errorf("X-Team = %q, want the header given with the webhook", v)
			}
			var p webhook.HookPayload
			if err := json.Unmarshal(last.body, &p); err != nil {
				t.Fatal(err)
			}
			if p.Type != queue.EventJobCompleted || p.JobID != id || string(p.Result) != `{"title":"Home"}` ||
				string(p.Metadata) != `{"crawl":"c-1"}` || p.Webhook != "job" {
				t.Fatalf("payload %s: want job.completed of %s with its result and metadata", last.body, id)
			}
			page, err := b.Deliveries(ctx, backend.DeliveryFilter{JobID: id})
			if err != nil {
				t.Fatal(err)
			}
			var outcomes []backend.DeliveryOutcome
			for _, dl := range page.Deliveries {
				if dl.Subscription == webhook.JobHookName {
					outcomes = append(outcomes, dl.Outcome)
				}
			}
			if len(outcomes) != 2 || outcomes[0] != backend.DeliveryOK || outcomes[1] != backend.DeliveryRetry {
				t.Fatalf("delivery log outcomes %v, want [delivered retry] (newest first)", outcomes)
			}
		})
	}
}

// TestGroupWebhookAndDefaults delivers a job event and the group's
// completion to the group's webhook, signed with the default secret (the
// tenant has none), and a result over MaxResult as a link.
func TestGroupWebhookAndDefaults(t *testing.T) {
	for name, open := range hookBackends() {
		t.Run(name, func(t *testing.T) {
			clk := clock.NewFake(epoch)
			b := open(t, clk)
			rc := &recorder{}
			srv := newServer(t, rc.ServeHTTP)
			ctx := context.Background()
			_, err := queue.NewClient(b).CreateGroup(ctx, queue.GroupSpec{ID: "crawl-7", Tenant: "beta", Webhook: &queue.Webhook{
				URL: srv.URL, Metadata: json.RawMessage(`"m"`),
			}})
			if err != nil {
				t.Fatal(err)
			}
			d := newDispatcher(t, b, webhook.Config{Clock: clk, Jobs: &webhook.JobHooks{
				Backend: b, Secret: "server-secret", MaxResult: 4,
				ResultURL: func(id string) string { return "https://sluice.example/v1/jobs/" + id },
			}})
			id := finish(t, b, queue.JobSpec{Queue: "crawl", Kind: "page", Tenant: "beta", Group: "crawl-7"}, []byte(`"too long"`))
			for n := 0; n < 3 && len(rc.deliveries()) < 2; n++ {
				if _, err := d.DispatchOnce(ctx); err != nil {
					t.Fatal(err)
				}
			}
			got := rc.deliveries()
			if len(got) != 2 {
				t.Fatalf("receiver got %d requests, want the job's event and group.completed", len(got))
			}
			types := map[queue.EventType]webhook.HookPayload{}
			for _, g := range got {
				if err := webhook.Verify("server-secret", g.header.Get(webhook.SignatureHeader), g.body, time.Minute, clk.Now()); err != nil {
					t.Fatalf("signature under the default secret: %v", err)
				}
				var p webhook.HookPayload
				if err := json.Unmarshal(g.body, &p); err != nil {
					t.Fatal(err)
				}
				types[p.Type] = p
			}
			jp, gp := types[queue.EventJobCompleted], types[queue.EventGroupCompleted]
			if jp.JobID != id || jp.Group != "crawl-7" || jp.Result != nil || jp.ResultSize != 10 ||
				jp.ResultURL != "https://sluice.example/v1/jobs/"+id || string(jp.Metadata) != `"m"` || jp.Webhook != "group" {
				t.Errorf("job event %+v: want the group's webhook with a link to the result", jp)
			}
			if gp.Group != "crawl-7" || string(gp.Metadata) != `"m"` {
				t.Errorf("group event %+v: want group.completed with the metadata", gp)
			}
		})
	}
}

// TestJobWebhookRefusedAtConnect makes the webhook's host resolve to a
// private address when the dispatcher connects (DNS rebinding after a
// check at enqueue): the attempt is refused, never sent, and logged as
// refused.
func TestJobWebhookRefusedAtConnect(t *testing.T) {
	for name, open := range hookBackends() {
		t.Run(name, func(t *testing.T) {
			clk := clock.NewFake(epoch)
			b := open(t, clk)
			rc := &recorder{}
			srv := newServer(t, rc.ServeHTTP)
			_, port, _ := splitHostPort(srv.URL)
			var calls int
			resolve := func(ctx context.Context, host string) ([]netip.Addr, error) {
				calls++
				if calls == 1 {
					return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil // public when checked
				}
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil // rebound to the receiver on loopback
			}
			url := "http://hooks.example:" + port + "/hook"
			if err := (webhook.Guard{}).CheckURL(context.Background(), url, resolve); err != nil {
				t.Fatalf("CheckURL at enqueue: %v", err)
			}
			d, err := webhook.New(b, webhook.Config{Clock: clk, Logger: quiet, Resolve: resolve,
				Jobs: &webhook.JobHooks{Backend: b}})
			if err != nil {
				t.Fatal(err)
			}
			id := finish(t, b, queue.JobSpec{Queue: "q", Kind: "k", Webhook: &queue.Webhook{URL: url}}, nil)
			dispatch(t, d, 1)
			if n := len(rc.deliveries()); n != 0 {
				t.Fatalf("the receiver on loopback got %d requests, want none", n)
			}
			page, err := b.Deliveries(context.Background(), backend.DeliveryFilter{JobID: id})
			if err != nil || len(page.Deliveries) != 1 || page.Deliveries[0].Outcome != backend.DeliveryRefused {
				t.Fatalf("delivery log %+v, %v: want one refused attempt", page, err)
			}
			if e := page.Deliveries[0].Error; !strings.Contains(e, "loopback") {
				t.Errorf("refusal %q does not say the address is loopback", e)
			}
		})
	}
}

// TestCheckURL covers the enqueue-time check.
func TestCheckURL(t *testing.T) {
	t.Parallel()
	private := func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.1.2.3")}, nil
	}
	cases := []struct {
		url  string
		g    webhook.Guard
		want error
	}{
		{"https://93.184.216.34/x", webhook.Guard{}, nil},
		{"http://127.0.0.1:8080/x", webhook.Guard{}, webhook.ErrRefused},
		{"http://[::1]/x", webhook.Guard{}, webhook.ErrRefused},
		{"http://169.254.169.254/latest", webhook.Guard{}, webhook.ErrRefused},
		{"http://name.example/x", webhook.Guard{}, webhook.ErrRefused}, // one of its addresses is private
		{"http://10.1.2.3/x", webhook.Guard{Allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, nil},
		{"ftp://93.184.216.34/x", webhook.Guard{}, webhook.ErrBadURL},
		{"/relative", webhook.Guard{}, webhook.ErrBadURL},
	}
	for _, c := range cases {
		err := c.g.CheckURL(context.Background(), c.url, private)
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("CheckURL(%q) = %v, want %v", c.url, err, c.want)
		}
	}
}

func splitHostPort(u string) (string, string, error) {
	_, rest, _ := strings.Cut(u, "://")
	return net.SplitHostPort(rest)
}

// TestDeliverySpanContinuesTheJobsTrace: with a TracerProvider, the
// delivery of a job's webhook is a span in the trace of the job's
// enqueue.
func TestDeliverySpanContinuesTheJobsTrace(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(epoch)
	b := openBackend(t, clk, true)
	srv := newServer(t, nil)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, caller := tp.Tracer("app").Start(context.Background(), "crawl")
	caller.End()
	j, err := queue.NewClient(b, queue.ClientConfig{TracerProvider: tp}).Enqueue(ctx,
		queue.JobSpec{Queue: "q", Kind: "k", Webhook: &queue.Webhook{URL: srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, WorkerID: "w", Max: 1, LeaseFor: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("Lease = %d, %v", len(ls), err)
	}
	if err := b.Complete(ctx, j.ID, ls[0].Token, nil); err != nil {
		t.Fatal(err)
	}
	d := newDispatcher(t, b, webhook.Config{Clock: clk, TracerProvider: tp, Jobs: &webhook.JobHooks{Backend: b}})
	dispatch(t, d, 1)
	for _, s := range rec.Ended() {
		if s.Name() == "sluice.webhook.deliver" {
			if s.SpanContext().TraceID() != caller.SpanContext().TraceID() {
				t.Fatalf("delivery span in trace %s, want the enqueue's %s", s.SpanContext().TraceID(), caller.SpanContext().TraceID())
			}
			return
		}
	}
	t.Fatal("no delivery span")
}
