package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
	"github.com/sluicehq/sluice/queue/webhook"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
	"github.com/sluicehq/sluice/server/config"
)

// newOutboxHarness is a harness whose SQLite job store records events, as
// the server opens it when webhooks given with jobs are on.
func newOutboxHarness(t *testing.T, cfg *config.Config, opts Options) *harness {
	t.Helper()
	clk := clock.NewFake(clock.Real.Now())
	store := memlimit.New(memlimit.Options{Clock: clk, SweepInterval: -1})
	t.Cleanup(func() { store.Close() })
	b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlitequeue.Options{Outbox: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	opts.Config, opts.Limits, opts.Queue, opts.Logger = cfg, store, b, slog.New(slog.DiscardHandler)
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &harness{t: t, srv: srv, http: hs, clk: clk}
}

// resolveTo makes webhook host names resolve to addrs, in turn (the last
// one from then on), for the test.
func resolveTo(t *testing.T, addrs ...string) {
	var n atomic.Int32
	webhookResolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
		i := min(int(n.Add(1))-1, len(addrs)-1)
		return []netip.Addr{netip.MustParseAddr(addrs[i])}, nil
	}
	t.Cleanup(func() { webhookResolve = nil })
}

// TestJobWebhookURLRefusedAtEnqueue: a webhook URL whose host is, or
// resolves to, an address the SSRF guard refuses is answered 400 naming
// the field, and nothing is stored; webhooks.allow_networks lets it in.
func TestJobWebhookURLRefusedAtEnqueue(t *testing.T) {
	resolveTo(t, "10.9.8.7")
	h := newOutboxHarness(t, config.Default(), Options{})
	job := func(url string) string { return `{"queue":"q","kind":"k","webhook":{"url":"` + url + `"}}` }
	cases := []struct {
		path, body string
		want       []string
	}{
		{"/v1/jobs", job("http://127.0.0.1:9/x"), []string{"webhook.url", "loopback", "webhooks.allow_networks"}},
		{"/v1/jobs", job("http://10.0.0.5/x"), []string{"webhook.url", "private"}},
		{"/v1/jobs", job("http://169.254.10.1/x"), []string{"webhook.url", "link-local"}},
		{"/v1/jobs", job("http://169.254.169.254/latest/meta-data"), []string{"webhook.url", "cloud metadata"}},
		{"/v1/jobs", job("http://internal.example/x"), []string{"webhook.url", "private", "10.9.8.7"}},
		{"/v1/jobs", job("ftp://93.184.216.34/x"), []string{"webhook.url", "http or https"}},
		{"/v1/jobs/batch", `{"jobs":[` + job("https://93.184.216.34/a") + `,` + job("http://[::1]/b") + `]}`, []string{"jobs[1].webhook.url", "loopback"}},
		{"/v1/jobs", `{"queue":"q","kind":"k","webhook":{"url":"https://93.184.216.34/","headers":{"Sluice-Signature":"x"}}}`, []string{"webhook.headers"}},
		{"/v1/groups", `{"id":"g1","webhook":{"url":"http://192.168.1.10/x"}}`, []string{"webhook.url", "private"}},
	}
	for _, c := range cases {
		r := h.do("POST", c.path, "", c.body)
		detail, _ := r.body["detail"].(string)
		if r.status != http.StatusBadRequest {
			t.Errorf("POST %s %s = %d %s, want 400", c.path, c.body, r.status, r.raw)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(detail, w) {
				t.Errorf("POST %s %s: detail %q does not say %q", c.path, c.body, detail, w)
			}
		}
	}
	if r := h.do("GET", "/v1/jobs", "", ""); len(r.body["jobs"].([]any)) != 0 {
		t.Fatalf("refused enqueues stored jobs: %s", r.raw)
	}

	r := h.do("POST", "/v1/jobs", "", `{"queue":"q","kind":"k","webhook":{"url":"https://93.184.216.34/h","metadata":{"a":1},"headers":{"Authorization":"Bearer s3"}}}`)
	if r.status != http.StatusCreated {
		t.Fatalf("public address: %d %s", r.status, r.raw)
	}
	got := h.do("GET", "/v1/jobs/"+jobID(r), "", "")
	wh, _ := got.body["webhook"].(map[string]any)
	if wh["url"] != "https://93.184.216.34/h" || fmt.Sprint(wh["headers"]) != "map[Authorization:[redacted]]" {
		t.Fatalf("GET job webhook = %v, want the URL with header values redacted", wh)
	}

	cfg := config.Default()
	cfg.Webhooks.AllowNetworks = []string{"127.0.0.1"}
	allowed := newOutboxHarness(t, cfg, Options{})
	if r := allowed.do("POST", "/v1/jobs", "", job("http://127.0.0.1:9/x")); r.status != http.StatusCreated {
		t.Fatalf("allowed by webhooks.allow_networks: %d %s", r.status, r.raw)
	}
	cfg = config.Default()
	cfg.Webhooks.Jobs.Off = true
	off := newOutboxHarness(t, cfg, Options{})
	if r := off.do("POST", "/v1/jobs", "", job("https://93.184.216.34/x")); r.status != http.StatusBadRequest ||
		!strings.Contains(r.raw, "webhooks.jobs.off") {
		t.Fatalf("with webhooks.jobs.off: %d %s, want 400 naming it", r.status, r.raw)
	}
}

// hookReceiver collects the requests of webhook deliveries.
type hookReceiver struct {
	mu  sync.Mutex
	got []delivered
}

type delivered struct {
	header http.Header
	body   []byte
}

func (hr *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	hr.mu.Lock()
	hr.got = append(hr.got, delivered{r.Header.Clone(), body})
	hr.mu.Unlock()
}

func (hr *hookReceiver) all() []delivered {
	hr.mu.Lock()
	defer hr.mu.Unlock()
	return append([]delivered(nil), hr.got...)
}

// serveRun runs `sluice serve` on cfg until the test ends and returns its
// base URL.
func serveRun(t *testing.T, cfg *config.Config) string {
	t.Helper()
	cfg.Server.Listen = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, RunOptions{Config: cfg, Logger: slog.New(slog.DiscardHandler), Listening: func(h, _ string) { addr <- h }})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case a := <-addr:
		return "http://" + a
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	return ""
}

func call(t *testing.T, method, url, body string, out any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatal(err)
		}
	}
}

// TestServeDeliversJobWebhooks runs `sluice serve` on SQLite and Redis:
// a job enqueued with a webhook and metadata, completed over the worker
// API with a result, reaches its receiver with the result and metadata,
// signed with the secret set for its tenant through the API.
func TestServeDeliversJobWebhooks(t *testing.T) {
	webhookGuard = webhook.Guard{AllowAll: true} // the receiver listens on 127.0.0.1
	t.Cleanup(func() { webhookGuard = webhook.Guard{} })
	for name, storage := range map[string]func(t *testing.T, c *config.Config){
		"sqlite": func(t *testing.T, c *config.Config) { c.Storage.DataDir = t.TempDir() },
		"redis": func(t *testing.T, c *config.Config) {
			c.Storage.RedisURL = "redis://" + miniredis.RunT(t).Addr() + "/0"
		},
		// A router over Redis and the embedded store: the tenant's secret
		// is kept by the default backend, through the router.
		"routed": func(t *testing.T, c *config.Config) {
			c.Storage.RedisURL = "redis://" + miniredis.RunT(t).Addr() + "/0"
			c.Storage.DataDir = t.TempDir()
			c.Queues.Backends = map[string]string{"report": config.BackendEmbedded}
		},
	} {
		t.Run(name, func(t *testing.T) {
			rc := &hookReceiver{}
			hs := httptest.NewServer(rc)
			defer hs.Close()
			cfg := config.Default()
			storage(t, cfg)
			cfg.Webhooks.Jobs.Secret = "server-secret"
			base := serveRun(t, cfg)
			call(t, "PUT", base+"/v1/tenants/acme/webhook-secret", `{"secret":"acme-secret"}`, nil)
			var enq enqueuedBody
			call(t, "POST", base+"/v1/jobs", `{"queue":"crawl","kind":"page","tenant":"acme",
				"webhook":{"url":"`+hs.URL+`/done","metadata":{"crawl_id":"c-42"},"events":["job.completed"]}}`, &enq)
			var leased leasesBody
			call(t, "POST", base+"/v1/worker/lease", `{"queues":["crawl"],"worker_id":"w1"}`, &leased)
			if len(leased.Leases) != 1 {
				t.Fatalf("leased %d jobs, want 1", len(leased.Leases))
			}
			l := leased.Leases[0]
			call(t, "POST", base+"/v1/worker/jobs/"+l.Job.ID+"/complete", `{"token":"`+l.Token+`","result":{"pages":3}}`, nil)

			testutil.Eventually(t, "the webhook delivery", func() bool { return len(rc.all()) > 0 })
			d := rc.all()[0]
			if err := webhook.Verify("acme-secret", d.header.Get(webhook.SignatureHeader), d.body, time.Minute, time.Now()); err != nil {
				t.Fatalf("signature under the tenant's secret: %v (%s)", err, d.body)
			}
			var p webhook.HookPayload
			if err := json.Unmarshal(d.body, &p); err != nil {
				t.Fatal(err)
			}
			if p.Type != queue.EventJobCompleted || p.JobID != enq.Job.ID || string(p.Result) != `{"pages":3}` ||
				string(p.Metadata) != `{"crawl_id":"c-42"}` || p.Tenant != "acme" {
				t.Fatalf("payload %s: want job.completed of %s with the result and metadata", d.body, enq.Job.ID)
			}
			testutil.Eventually(t, "the delivery in the job's log", func() error {
				var page struct {
					Deliveries []backend.Delivery `json:"deliveries"`
				}
				call(t, "GET", base+"/v1/jobs/"+enq.Job.ID+"/deliveries", "", &page)
				for _, dl := range page.Deliveries {
					if dl.Subscription == webhook.JobHookName && dl.Outcome == backend.DeliveryOK {
						return nil
					}
				}
				return fmt.Errorf("log %+v", page.Deliveries)
			})
		})
	}
}

// TestServeRefusesRebindingAtConnect: the webhook's host resolves to a
// public address when the job is enqueued, then to loopback: the
// delivery is refused at connect time and logged, and the receiver on
// loopback gets nothing.
func TestServeRefusesRebindingAtConnect(t *testing.T) {
	rc := &hookReceiver{}
	hs := httptest.NewServer(rc)
	defer hs.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(hs.URL, "http://"))
	resolveTo(t, "93.184.216.34", "127.0.0.1")
	cfg := config.Default()
	cfg.Storage.DataDir = t.TempDir()
	base := serveRun(t, cfg)
	var enq enqueuedBody
	call(t, "POST", base+"/v1/jobs", `{"queue":"q","kind":"k","webhook":{"url":"http://hooks.example:`+port+`/x"}}`, &enq)
	var leased leasesBody
	call(t, "POST", base+"/v1/worker/lease", `{"queues":["q"],"worker_id":"w1"}`, &leased)
	l := leased.Leases[0]
	call(t, "POST", base+"/v1/worker/jobs/"+l.Job.ID+"/complete", `{"token":"`+l.Token+`"}`, nil)
	testutil.Eventually(t, "a refused delivery in the job's log", func() error {
		var page struct {
			Deliveries []backend.Delivery `json:"deliveries"`
		}
		call(t, "GET", base+"/v1/jobs/"+enq.Job.ID+"/deliveries", "", &page)
		for _, dl := range page.Deliveries {
			if dl.Outcome == backend.DeliveryRefused && strings.Contains(dl.Error, "loopback") {
				return nil
			}
		}
		return fmt.Errorf("log %+v", page.Deliveries)
	})
	if n := len(rc.all()); n != 0 {
		t.Fatalf("the receiver on loopback got %d requests, want none", n)
	}
}
