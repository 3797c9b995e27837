package server

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/sluicehq/sluice/internal/amqptest"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
	"github.com/sluicehq/sluice/server/config"
)

func openTestStores(t *testing.T, cfg *config.Config) *Stores {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	st, err := OpenStores(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("OpenStores: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return st
}

// With every queue on the storage's backend, the job store is that
// backend itself: no router, ids unchanged.
func TestStoresOneBackend(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Storage.DataDir = t.TempDir()
	st := openTestStores(t, cfg)
	if _, ok := st.Queue.(*sqlitequeue.Backend); !ok || st.Kind != "embedded" {
		t.Fatalf("Queue = %T, Kind = %q; want *sqlitequeue.Backend, embedded", st.Queue, st.Kind)
	}
}

// Counters and jobs on Redis, one queue placed on the embedded store: a
// router holds both, ids name the backend, Ping checks both, stats merge.
func TestStoresPlaceQueues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mr := miniredis.RunT(t)
	cfg := config.Default()
	cfg.Storage.RedisURL = "redis://" + mr.Addr() + "/0"
	cfg.Storage.DataDir = t.TempDir()
	cfg.Queues.Backends = map[string]string{"report": config.BackendEmbedded}
	st := openTestStores(t, cfg)
	if f := st.Queue.Features(); f.Router == nil || f.Name != "mux" {
		t.Fatalf("Queue = %s, want a router", f.Name)
	}
	if st.Kind != "redis, jobs on redis+embedded" {
		t.Errorf("Kind = %q", st.Kind)
	}
	c := queue.NewClient(st.Queue)
	res, err := c.EnqueueBatch(ctx, []queue.JobSpec{{Queue: "report", Kind: "k", Tenant: "beta"}, {Queue: "scrape", Kind: "k", Tenant: "acme"}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Job.ID != "embedded.1" || strings.HasPrefix(res[1].Job.ID, "embedded.") {
		t.Fatalf("ids = %s, %s; want embedded.1 and a Redis id", res[0].Job.ID, res[1].Job.ID)
	}
	stats, err := c.Stats(ctx)
	if err != nil || len(stats) != 2 || stats[0].Queue != "report" || stats[1].Queue != "scrape" {
		t.Fatalf("Stats = %+v, %v; want report and scrape", stats, err)
	}
	// Filters reach both backends; the tenant list is the default
	// backend's (Redis): acme, not the embedded queue's beta.
	p, err := c.List(ctx, queue.ListFilter{Kind: "k", Order: queue.NewestFirst})
	if err != nil || len(p.Jobs) != 2 || p.Next != "" {
		t.Fatalf("List(kind k, newest) = %+v, %v; want both jobs", p, err)
	}
	if tp, err := c.Tenants(ctx, queue.TenantFilter{}); err != nil || len(tp.Tenants) != 1 || tp.Tenants[0].Tenant != "acme" {
		t.Fatalf("Tenants on a Redis default = %+v, %v; want acme alone", tp, err)
	}
	if err := st.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	mr.Close()
	if err := st.Ping(ctx); err == nil {
		t.Fatal("Ping with Redis down = nil, want an error")
	}
}

// A placement change in a reloaded config is kept as running, with a
// warning; other queue settings apply.
func TestPlacementNeedsRestart(t *testing.T) {
	t.Parallel()
	cur := config.Default()
	next := config.Default()
	next.Queues.Backends = map[string]string{"scrape": config.BackendRabbitMQ}
	next.Queues.RabbitMQ.URL = "amqp://h/"
	next.Queues.MaxDepth = 7
	var buf bytes.Buffer
	got := keepPlacement(cur, next, slog.New(slog.NewTextHandler(&buf, nil)))
	if len(got.Queues.Backends) != 0 || got.Queues.RabbitMQ.URL != "" || got.Queues.MaxDepth != 7 {
		t.Fatalf("kept = %+v", got.Queues)
	}
	if !strings.Contains(buf.String(), "next start") {
		t.Errorf("log = %q, want a warning", buf.String())
	}
	if same := keepPlacement(cur, cur, slog.New(slog.DiscardHandler)); same != cur {
		t.Error("an unchanged placement was copied")
	}
	lane := config.Default()
	lane.Webhooks.Lane = "rabbitmq"
	if got := keepPlacement(cur, lane, slog.New(slog.DiscardHandler)); got.Webhooks.Lane != "" {
		t.Errorf("a webhooks.lane change applied on reload: kept %q, want the running \"\"", got.Webhooks.Lane)
	}
}

// With the lane configured, a queue on it runs there, a unique job for it
// is refused naming amqpqueue, and the lane answers Ping.
func TestStoresLane(t *testing.T) {
	u := amqptest.URL(t, "the test on the RabbitMQ lane")
	ctx := context.Background()
	cfg := config.Default()
	cfg.Storage.DataDir = t.TempDir()
	cfg.Queues.Backends = map[string]string{"scrape": config.BackendRabbitMQ}
	cfg.Queues.RabbitMQ = config.RabbitMQ{URL: u, Prefix: amqptest.Prefix(t, u, "server", "scrape")}
	st := openTestStores(t, cfg)
	c := queue.NewClient(st.Queue)
	_, err := c.Enqueue(ctx, queue.JobSpec{Queue: "scrape", Kind: "k", UniqueKey: "u"})
	var ue *queue.UnsupportedError
	if !errors.As(err, &ue) || ue.Backend != "amqpqueue" {
		t.Fatalf("unique job on the lane = %v, want amqpqueue's *UnsupportedError", err)
	}
	j, err := c.Enqueue(ctx, queue.JobSpec{Queue: "scrape", Kind: "k"})
	if err != nil || !strings.HasPrefix(j.ID, "rabbitmq.") {
		t.Fatalf("Enqueue(scrape) = %v, %v; want a rabbitmq. id", j, err)
	}
	if err := st.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

// recorder: redis keeps lane job states on the storage's Redis, where
// another store (another server) finds them.
func TestStoresLaneRedisRecorder(t *testing.T) {
	u := amqptest.URL(t, "the test on the RabbitMQ lane")
	ctx := context.Background()
	mr := miniredis.RunT(t)
	cfg := config.Default()
	cfg.Storage.RedisURL = "redis://" + mr.Addr() + "/0"
	cfg.Storage.DataDir = t.TempDir()
	cfg.Queues.Backends = map[string]string{"scrape": config.BackendRabbitMQ}
	cfg.Queues.RabbitMQ = config.RabbitMQ{URL: u, Prefix: amqptest.Prefix(t, u, "server", "scrape"), Recorder: "redis"}
	one := openTestStores(t, cfg)
	j, err := queue.NewClient(one.Queue).Enqueue(ctx, queue.JobSpec{Queue: "scrape", Kind: "k"})
	if err != nil {
		t.Fatal(err)
	}
	two := openTestStores(t, cfg)
	got, err := two.Queue.Get(ctx, j.ID)
	if err != nil || got.State != queue.StatePending || got.Queue != "scrape" {
		t.Fatalf("Get from another store = %+v, %v; want the pending scrape job", got, err)
	}
}
