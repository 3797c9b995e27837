package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/amqptest"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/server/config"
)

// TestServeTenantLimitOnLane runs the server with the scrape queue on the
// RabbitMQ lane, as configured, and sets a tenant limit of 1: without a
// scheduler the tenant's scrape jobs are refused (400); with
// queues.rabbitmq.scheduler: redis they are accepted, one pending and the
// rest waiting, and one lease call hands out one of them.
func TestServeTenantLimitOnLane(t *testing.T) {
	u := amqptest.URL(t, "the lane behind the server")
	for _, sched := range []string{"", "redis"} {
		t.Run("scheduler="+sched, func(t *testing.T) {
			cfg := config.Default()
			cfg.Server.Listen = "127.0.0.1:0"
			cfg.Storage.DataDir = t.TempDir()
			cfg.Queues.Backends = map[string]string{"scrape": config.BackendRabbitMQ}
			cfg.Queues.RabbitMQ = config.RabbitMQ{URL: u, Prefix: amqptest.Prefix(t, u, "server", "scrape"), Scheduler: sched}
			if sched == "redis" {
				o, ok := redisOptions(t)
				if !ok {
					t.Skipf("%s is not set", redistest.EnvURL)
				}
				cfg.Storage.RedisURL = os.Getenv(redistest.EnvURL)
				cfg.Storage.Prefix = string(redistest.Prefix(t, o))
				cfg.Queues.DefaultBackend = config.BackendEmbedded
			}
			base, stop := serveConfig(t, cfg)
			defer stop()
			status, body := httpCall(t, "PUT", base+"/v1/tenants/t8/limit", `{"concurrency":1}`)
			if status != 200 {
				t.Fatalf("PUT limit: %d %s", status, body)
			}
			if warned := strings.Contains(body, "scrape"); warned != (sched == "") {
				t.Fatalf("PUT limit answered %s; a warning naming scrape: %v", body, sched == "")
			}
			states := map[string]int{}
			for range 5 {
				status, body := httpCall(t, "POST", base+"/v1/jobs", `{"queue":"scrape","kind":"page","tenant":"t8"}`)
				if sched == "" {
					if status != 400 || !strings.Contains(body, "scrape") || !strings.Contains(body, "amqpqueue") || !strings.Contains(body, "tenant scheduling") {
						t.Fatalf("job on the lane without a scheduler: %d %s, want 400 naming scrape, amqpqueue and tenant scheduling", status, body)
					}
					return
				}
				var e struct {
					Job struct{ State string } `json:"job"`
				}
				if status != 201 || json.Unmarshal([]byte(body), &e) != nil {
					t.Fatalf("POST job: %d %s", status, body)
				}
				states[e.Job.State]++
			}
			if states["pending"] != 1 || states["waiting"] != 4 {
				t.Fatalf("states %v, want 1 pending and 4 waiting", states)
			}
			status, body = httpCall(t, "POST", base+"/v1/worker/lease", `{"queues":["scrape"],"worker_id":"w1","max":5}`)
			var leased leasesBody
			if status != 200 || json.Unmarshal([]byte(body), &leased) != nil || len(leased.Leases) != 1 {
				t.Fatalf("lease: %d %s, want one job (the tenant's limit)", status, body)
			}
		})
	}
}

func redisOptions(t *testing.T) (*redis.Options, bool) {
	raw := os.Getenv(redistest.EnvURL)
	if raw == "" {
		return nil, false
	}
	o, err := redis.ParseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	return o, true
}

// serveConfig runs the server on cfg and returns its base URL and how to stop it.
func serveConfig(t *testing.T, cfg *config.Config) (string, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, RunOptions{Config: cfg, Logger: slog.New(slog.DiscardHandler), Listening: func(h, _ string) { addr <- h }})
	}()
	select {
	case a := <-addr:
		return "http://" + a, func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		}
	case err := <-done:
		cancel()
		t.Fatalf("Run: %v", err)
	}
	return "", nil
}

func httpCall(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}
