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
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/amqptest"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/webhook"
	"github.com/sluicehq/sluice/server/config"
)

// With webhooks.lane: rabbitmq, a completed job's event goes through the
// lane's webhooks queue: the receiver's first answer (500) is retried, the
// signature verifies, and both attempts reach the delivery metrics.
func TestServeDeliversWebhooksOnLane(t *testing.T) {
	u := amqptest.URL(t, "webhook delivery on the RabbitMQ lane")
	webhookGuard = webhook.Guard{AllowAll: true} // the receiver listens on 127.0.0.1
	t.Cleanup(func() { webhookGuard = webhook.Guard{} })
	var mu sync.Mutex
	var bodies [][]byte
	var sigs []string
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		bodies, sigs = append(bodies, body), append(sigs, r.Header.Get(webhook.SignatureHeader))
		if len(bodies) == 1 {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer rc.Close()

	cfg := config.Default()
	cfg.Server.Listen = "127.0.0.1:0"
	cfg.Storage.DataDir = t.TempDir()
	cfg.Webhooks.Subscriptions = []config.Subscription{{Name: "ops", URL: rc.URL, Secret: "k", Events: []string{"job.completed"}}}
	cfg.Webhooks.Lane = config.BackendRabbitMQ
	// The retry comes after the dispatcher's first backoff (15s to 30s).
	cfg.Queues.RabbitMQ = config.RabbitMQ{URL: u, Prefix: amqptest.Prefix(t, u, "server", "webhooks")}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, RunOptions{Config: cfg, Logger: slog.New(slog.DiscardHandler), Listening: func(h, _ string) { addr <- h }})
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

	wants := []string{
		`sluice_webhook_deliveries_total{event="job.completed",outcome="` + string(backend.DeliveryRetry) + `",subscription="ops"} 1`,
		`sluice_webhook_deliveries_total{event="job.completed",outcome="` + string(backend.DeliveryOK) + `",subscription="ops"} 1`,
	}
	testutil.Eventually(t, fmt.Sprintf("metrics with %v", wants), func() error {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(raw), wants[0]) || !strings.Contains(string(raw), wants[1]) {
			return fmt.Errorf("they have:\n%s", grepLines(string(raw), "sluice_webhook"))
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, body := range bodies {
		var e queue.Event
		if err := json.Unmarshal(body, &e); err != nil || e.Type != queue.EventJobCompleted || e.JobID != l.Job.ID {
			t.Errorf("delivery %d: %s (%v), want job.completed of job %s", i, body, err, l.Job.ID)
		}
		if err := webhook.Verify("k", sigs[i], body, time.Minute, time.Now()); err != nil {
			t.Errorf("delivery %d: Verify: %v", i, err)
		}
	}
}
