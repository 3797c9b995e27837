package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/sluicehq/sluice/internal/redisbreaker"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue/pgqueue"
	"github.com/sluicehq/sluice/queue/redisqueue"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
	"github.com/sluicehq/sluice/queue/webhook"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
	"github.com/sluicehq/sluice/server/config"
)

// webhookReceiver serves /fail (always 500) and /slow (answers only when
// the caller gives up), and returns its URL.
func webhookReceiver(t *testing.T) string {
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-r.Context().Done():
			case <-release: // at the end: Close waits for every handler
			}
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(hs.Close)
	t.Cleanup(func() { close(release) }) // runs first
	return hs.URL
}

// parityWebhooks checks webhooks.delivery by the deliveries of a cancelled
// job: max_attempts 2 (default 5), backoff base 10ms (default 30s) and
// timeout 100ms (default 10s).
func parityWebhooks(t *testing.T, p *paritySetup) {
	id := p.enqueue(`{"queue":"hooked","kind":"k","delay_ms":3600000}`)["id"].(string)
	if r := p.call("POST", "/v1/jobs/"+id+"/cancel", ""); r.status != 200 {
		t.Fatalf("cancel: %d %s", r.status, r.raw)
	}
	var got map[string][]map[string]any
	testutil.Eventually(t, "both subscriptions to give up after 2 attempts", func() bool {
		got = map[string][]map[string]any{}
		r := p.call("GET", "/v1/jobs/"+id+"/deliveries", "")
		for _, d := range r.body["deliveries"].([]any) {
			d := d.(map[string]any)
			sub := d["subscription"].(string)
			got[sub] = append(got[sub], d)
		}
		done := func(ds []map[string]any) bool { return len(ds) > 0 && ds[0]["outcome"] == "failed" } // newest first
		return done(got["fail"]) && done(got["slow"])
	})
	for sub, ds := range got {
		if len(ds) != 2 || ds[0]["attempt"] != 2.0 {
			t.Errorf("%s: %d attempts, the last %v; want 2 (webhooks.delivery.max_attempts)", sub, len(ds), ds[0]["attempt"])
		}
		gap := timeField(t, ds[0], "at").Sub(timeField(t, ds[1], "at"))
		if gap > 10*time.Second {
			t.Errorf("%s: %s between attempts; want about 10ms (webhooks.delivery.backoff), not the default 30s", sub, gap)
		}
	}
	for _, d := range got["slow"] {
		if ms := d["latency_ms"].(float64); ms > 5000 || !strings.Contains(strings.ToLower(d["error"].(string)), "deadline") && !strings.Contains(strings.ToLower(d["error"].(string)), "timeout") {
			t.Errorf("slow receiver: latency %vms, error %q; want a timeout near 100ms (webhooks.delivery.timeout)", ms, d["error"])
		}
	}
}

// TestEveryStorageKeyReachesTheStores checks the options each store opens
// with against every storage and webhooks.delivery key of everyQueueKey,
// then two of them by the behaviour of stores OpenStores opened.
func TestEveryStorageKeyReachesTheStores(t *testing.T) {
	doc := strings.NewReplacer("DATA", t.TempDir(), "CGROUP", t.TempDir(), "HOOK", "http://127.0.0.1:1", "BASE", "1", "MEM", "0.9").Replace(everyQueueKey)
	cfg, err := config.Parse([]byte(doc), "every.yaml")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"storage.sqlite", sqliteOptions(cfg), sqlitequeue.Options{BusyTimeout: 7 * time.Second, ReadConns: 2, Durable: true, Outbox: true, Events: true}},
		{"storage.memory_limits", memlimitOptions(cfg), memlimit.Options{Shards: 8, MaxKeys: 100000, SweepInterval: time.Hour}},
		{"storage.redis_queue", redisQueueOptions(cfg, log), redisqueue.Options{Prefix: "sluice:", Logger: log, Outbox: true, Events: true, EventsMaxLen: 5000, DisableBatching: true, MaxBatch: 9, Senders: 3, CompleteLinger: 5 * time.Millisecond, EnqueueLinger: 3 * time.Millisecond}},
		{"storage.redis_limits", redisLimitOptions(cfg), redislimit.Options{Prefix: "sluice:", DisableBatching: true, MaxBatch: 11, Pipelines: 5, DenyCache: true, DenyCacheSize: 99}},
		{"storage.redis_breaker", breakerOptions(cfg, log), redisbreaker.Options{Failures: 1, ProbeInterval: time.Hour, Logger: log}},
		{"storage.postgres", postgresOptions(cfg), pgqueue.Options{Schema: "jobs", MaxConns: 3, SkipMigrate: true, Outbox: true, Events: true}},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", c.what, c.got, c.want)
		}
	}
	var wc webhook.Config
	tuneWebhooks(&wc, cfg.Webhooks.Delivery)
	if wc.Timeout != 100*time.Millisecond || wc.MaxAttempts != 2 || wc.Concurrency != 4 || wc.LeaseFor != time.Minute ||
		wc.PollInterval != 10*time.Millisecond || wc.ShutdownTimeout != time.Second || wc.LogRetention != 48*time.Hour ||
		wc.HostBudget == nil || wc.Backoff == nil || wc.Backoff(5, nil) > 20*time.Millisecond {
		t.Errorf("webhooks.delivery: %+v", wc)
	}

	t.Run("memory_limits by behaviour", func(t *testing.T) {
		cfg := config.Default()
		cfg.Storage.DataDir = t.TempDir()
		cfg.Storage.MemoryLimits = config.MemoryLimitsTuning{Shards: 1, MaxKeys: 1}
		st, err := OpenStores(context.Background(), cfg, log)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		take := func(key string) bool {
			d, err := st.Limits.Consume(context.Background(), ratelimit.Request{Key: key, Limit: ratelimit.Limit{Quota: 1, Window: time.Hour}, Cost: 1})
			if err != nil {
				t.Fatal(err)
			}
			return d.Allowed
		}
		// One counter held: b's drops a's, so a starts afresh.
		if !take("a") || !take("b") || !take("a") {
			t.Error("max_keys 1: the second take of a was denied: its counter was kept")
		}
	})
	t.Run("redis_breaker by behaviour", func(t *testing.T) {
		mr := miniredis.RunT(t)
		cfg := config.Default()
		cfg.Storage.RedisURL = "redis://" + mr.Addr() + "/0"
		cfg.Storage.RedisBreaker = config.RedisBreaker{Failures: 1, ProbeInterval: config.Duration(time.Hour)}
		st, err := OpenStores(context.Background(), cfg, log)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		mr.Close()
		req := ratelimit.Request{Key: "k", Limit: ratelimit.Limit{Quota: 1, Window: time.Hour}, Cost: 1}
		_, _ = st.Limits.Consume(context.Background(), req) // the one failure failures: 1 allows
		if _, err := st.Limits.Consume(context.Background(), req); !errors.Is(err, redisbreaker.ErrOpen) {
			t.Errorf("after one failure with failures 1: %v, want the breaker open", err)
		}
	})
}
