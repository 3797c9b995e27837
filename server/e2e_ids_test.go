package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"regexp"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/amqptest"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/server/config"
)

// urlSafeID is what every job id must match to go into a URL path as it is.
var urlSafeID = regexp.MustCompile(`^[A-Za-z0-9._~-]+$`)

// idStores are the job stores the id test runs on: each returns the
// configuration that places every queue of queuetest.OddQueueNames on it,
// or skips the test when its service is not configured.
var idStores = []struct {
	name string
	cfg  func(t *testing.T) *config.Config
}{
	{"sqlite", func(t *testing.T) *config.Config {
		cfg := config.Default()
		cfg.Storage.DataDir = t.TempDir()
		return cfg
	}},
	{"miniredis", func(t *testing.T) *config.Config {
		cfg := config.Default()
		cfg.Storage.RedisURL = "redis://" + miniredis.RunT(t).Addr() + "/0"
		return cfg
	}},
	{"redis", func(t *testing.T) *config.Config {
		u := os.Getenv("SLUICE_REDIS_URL")
		if u == "" {
			t.Skip("SLUICE_REDIS_URL not set: skipping the real-Redis run")
		}
		cfg := config.Default()
		cfg.Storage.RedisURL = u
		cfg.Storage.Prefix = randomRedisPrefix(t, u)
		return cfg
	}},
	{"postgres", func(t *testing.T) *config.Config {
		u := pgtest.URL(t)
		cfg := config.Default()
		cfg.Storage.PostgresURL = u
		cfg.Storage.Postgres = config.PostgresTuning{Schema: pgtest.Schema(t, u), MaxConns: 4}
		return cfg
	}},
	{"rabbitmq", func(t *testing.T) *config.Config {
		u := amqptest.URL(t, "the job id test on the RabbitMQ lane")
		cfg := config.Default()
		cfg.Storage.DataDir = t.TempDir()
		cfg.Queues.Backends = map[string]string{}
		for _, q := range queuetest.OddQueueNames {
			cfg.Queues.Backends[q] = config.BackendRabbitMQ
		}
		cfg.Queues.RabbitMQ = config.RabbitMQ{URL: u, Prefix: amqptest.Prefix(t, u, "server", queuetest.OddQueueNames...)}
		return cfg
	}},
}

// randomRedisPrefix returns a key prefix no other test uses and deletes
// its keys when the test ends.
func randomRedisPrefix(t *testing.T, url string) string {
	t.Helper()
	var r [6]byte
	_, _ = rand.Read(r[:])
	prefix := "sluicetest-" + hex.EncodeToString(r[:]) + ":"
	t.Cleanup(func() {
		opts, err := redis.ParseURL(url)
		if err != nil {
			t.Error(err)
			return
		}
		c := redis.NewClient(opts)
		defer c.Close()
		ctx := context.Background()
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			c.Unlink(ctx, iter.Val())
		}
	})
	return prefix
}

// storeHarness serves the stores cfg names over HTTP.
func storeHarness(t *testing.T, cfg *config.Config) *harness {
	t.Helper()
	st := openTestStores(t, cfg)
	srv, err := New(Options{Config: cfg, Limits: st.Limits, Queue: st.Queue, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &harness{t: t, srv: srv, http: hs, clk: clock.NewFake(clock.Real.Now())}
}

func jsonString(v string) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestJobIDsInURLPaths runs the worker protocol with queue names that hold
// characters a URL path reserves, on every store: each id is URL-safe and
// works as it is in /v1/worker/jobs/{id}/... and /v1/jobs/{id}.
func TestJobIDsInURLPaths(t *testing.T) {
	for _, s := range idStores {
		t.Run(s.name, func(t *testing.T) {
			h := storeHarness(t, s.cfg(t))
			for _, q := range queuetest.OddQueueNames {
				runByID(t, h, q)
			}
		})
	}
}

// runByID enqueues a job into q, leases it, heartbeats and completes it,
// and reads it back, naming it by its id in each path.
func runByID(t *testing.T, h *harness, q string) {
	t.Helper()
	r := h.do("POST", "/v1/jobs", "", `{"queue":`+jsonString(q)+`,"kind":"k","payload":{"n":1}}`)
	id := jobID(r)
	if r.status != 201 || !urlSafeID.MatchString(id) {
		t.Fatalf("queue %q: enqueue = %d %s; want 201 and an id matching %s", q, r.status, r.raw, urlSafeID)
	}
	r = h.do("POST", "/v1/worker/lease", "", `{"queues":[`+jsonString(q)+`],"worker_id":"w","max":1,"lease_ms":60000,"wait_ms":5000}`)
	leases, _ := r.body["leases"].([]any)
	if r.status != 200 || len(leases) != 1 {
		t.Fatalf("queue %q: lease = %d %s; want its job", q, r.status, r.raw)
	}
	l := leases[0].(map[string]any)
	tok := l["token"].(string)
	if got := l["job"].(map[string]any)["id"]; got != id {
		t.Fatalf("queue %q: leased %v, want %s", q, got, id)
	}
	if hb := h.do("POST", "/v1/worker/jobs/"+id+"/heartbeat", "", `{"token":"`+tok+`"}`); hb.status != 200 {
		t.Fatalf("queue %q: heartbeat of %s = %d %s", q, id, hb.status, hb.raw)
	}
	if c := h.do("POST", "/v1/worker/jobs/"+id+"/complete", "", `{"token":"`+tok+`","result":{"ok":true}}`); c.status != 200 || c.body["state"] != "completed" {
		t.Fatalf("queue %q: complete of %s = %d %s", q, id, c.status, c.raw)
	}
	g := h.do("GET", "/v1/jobs/"+id, "", "")
	if g.status != 200 || g.body["state"] != "completed" || g.body["queue"] != q {
		t.Fatalf("queue %q: GET /v1/jobs/%s = %d %s; want it completed in its queue", q, id, g.status, g.raw)
	}
}
