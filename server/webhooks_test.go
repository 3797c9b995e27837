package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/webhook"
	"github.com/sluicehq/sluice/server/config"
)

// TestServeDeliversWebhooks runs `sluice serve` with a subscription, on
// the embedded store and on Redis (miniredis), and completes a job over
// the worker API: the receiver gets its signed job.completed event.
func TestServeDeliversWebhooks(t *testing.T) {
	webhookGuard = webhook.Guard{AllowAll: true} // the receiver listens on 127.0.0.1
	t.Cleanup(func() { webhookGuard = webhook.Guard{} })
	t.Run("sqlite", func(t *testing.T) {
		cfg := config.Default()
		cfg.Storage.DataDir = t.TempDir()
		serveAndDeliver(t, cfg)
	})
	t.Run("redis", func(t *testing.T) {
		cfg := config.Default()
		cfg.Storage.RedisURL = "redis://" + miniredis.RunT(t).Addr() + "/0"
		serveAndDeliver(t, cfg)
	})
}

// serveAndDeliver runs the server on cfg's storage with one subscription,
// completes a job and checks the delivery and its metrics.
func serveAndDeliver(t *testing.T, cfg *config.Config) {
	type delivery struct {
		sig  string
		body []byte
	}
	got := make(chan delivery, 4)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- delivery{r.Header.Get(webhook.SignatureHeader), body}
	}))
	defer rc.Close()

	cfg.Server.Listen = "127.0.0.1:0"
	cfg.Webhooks.Subscriptions = []config.Subscription{{Name: "ops", URL: rc.URL, Secret: "k", Events: []string{"job.completed"}}}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, RunOptions{Config: cfg, Logger: slog.New(slog.DiscardHandler),
			Listening: func(h, _ string) { addr <- h }})
	}()
	base := "http://" + <-addr
	post := func(path, body string, out any) {
		t.Helper()
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 300 {
			raw, _ := io.ReadAll(resp.Body)
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, raw)
		}
		if out != nil {
			if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
				t.Fatal(err)
			}
		}
	}
	post("/v1/jobs", `{"queue":"mail","kind":"send"}`, nil)
	var leased leasesBody
	post("/v1/worker/lease", `{"queues":["mail"],"worker_id":"w1"}`, &leased)
	if len(leased.Leases) != 1 {
		t.Fatalf("leased %d jobs, want 1", len(leased.Leases))
	}
	l := leased.Leases[0]
	post("/v1/worker/jobs/"+l.Job.ID+"/complete", `{"token":"`+l.Token+`"}`, nil)

	var d delivery
	select {
	case d = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("no webhook delivery within 30s")
	}
	// The attempt is recorded after the receiver answers: wait for it to
	// reach the metrics.
	want := `sluice_webhook_deliveries_total{event="job.completed",outcome="` + string(backend.DeliveryOK) + `",subscription="ops"} 1`
	testutil.Eventually(t, "metrics with "+want, func() error {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(raw), want) || !strings.Contains(string(raw), `sluice_webhook_delivery_seconds_count{subscription="ops"} 1`) {
			return fmt.Errorf("they have:\n%s", grepLines(string(raw), "sluice_webhook"))
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	var e queue.Event
	if err := json.Unmarshal(d.body, &e); err != nil || e.Type != queue.EventJobCompleted || e.JobID != l.Job.ID {
		t.Fatalf("delivered %s (%v), want job.completed of job %s", d.body, err, l.Job.ID)
	}
	if err := webhook.Verify("k", d.sig, d.body, time.Minute, time.Now()); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

// TestServeRefusesWebhooksOnCluster: on a Redis Cluster the job store
// keeps no outbox, so webhooks there are refused at start, in the
// config's words.
func TestServeRefusesWebhooksOnCluster(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Storage.RedisURL = "redis://" + miniredis.RunT(t).Addr()
	cfg.Storage.RedisMode = "cluster"
	cfg.Webhooks.Subscriptions = []config.Subscription{{Name: "ops", URL: "https://example.com/hook"}}
	err := Run(context.Background(), RunOptions{Config: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "storage.redis_mode") {
		t.Fatalf("Run = %v, want an error naming storage.redis_mode", err)
	}
}

func TestServeRefusesBadWebhookNames(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Webhooks.Subscriptions = []config.Subscription{{Name: "has space", URL: "https://example.com"}}
	err := Run(context.Background(), RunOptions{Config: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "webhooks.subscriptions[0]") {
		t.Fatalf("Run = %v, want a webhooks.subscriptions[0] error", err)
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
