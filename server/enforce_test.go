package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/amqptest"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/amqpqueue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/mux"
	"github.com/sluicehq/sluice/queue/pgqueue"
	"github.com/sluicehq/sluice/queue/redisqueue"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// bareBackend is a store that declares no tenant scheduling and no
// groups, as any backend may.
type bareBackend struct{ *sqlitequeue.Backend }

func (b bareBackend) Features() backend.Features {
	f := b.Backend.Features()
	f.Name, f.Tenants, f.TenantList, f.Groups, f.Outbox, f.Events = "bare", nil, nil, nil, nil, nil
	f.Capabilities = f.Capabilities.Without(queue.CapTenants, queue.CapGroups, queue.CapTenantList, queue.CapEvents)
	return f
}

// scrapeBackends are the backends the HTTP enforcement test puts the
// scrape queue on, and whether each schedules by tenant.
var scrapeBackends = []struct {
	name    string
	open    func(t *testing.T) backend.Backend
	tenants bool
}{
	{"bare", func(t *testing.T) backend.Backend { return bareBackend{openQueue(t, sqlitequeue.Options{})} }, false},
	{"sqlite", func(t *testing.T) backend.Backend { return openQueue(t, sqlitequeue.Options{}) }, true},
	{"redis", func(t *testing.T) backend.Backend {
		mr := miniredis.RunT(t)
		c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { c.Close() })
		b, err := redisqueue.New(c, redisqueue.Options{DisableBreaker: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}, true},
	{"postgres", func(t *testing.T) backend.Backend {
		url := pgtest.URL(t)
		s, err := pgqueue.Open(context.Background(), url, pgqueue.Options{Schema: pgtest.Schema(t, url), MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}, true},
	{"rabbitmq", func(t *testing.T) backend.Backend {
		u := amqptest.URL(t, "the lane behind the server")
		prefix := amqptest.Prefix(t, u, "server", "scrape")
		b, err := amqpqueue.New(u, amqpqueue.Options{Prefix: prefix, LeaseWait: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}, false},
}

// TestServerNoSilentBypass drives the case of a tenant limit and a crawl
// group on a queue routed to each backend through HTTP: where the backend
// cannot enforce them, setting them answers with a warning naming the
// queue, and a job that needs them is refused with 400 naming the queue,
// the backend and the capability; where it can, the job is accepted and
// held by the limit.
func TestServerNoSilentBypass(t *testing.T) {
	t.Parallel()
	for _, sb := range scrapeBackends {
		t.Run(sb.name, func(t *testing.T) {
			t.Parallel()
			side := sb.open(t)
			m, err := mux.New(openQueue(t, sqlitequeue.Options{}), mux.Route{Name: "side", Backend: side, Queues: []string{"scrape"}})
			if err != nil {
				t.Fatal(err)
			}
			h := newHarnessOn(t, testConfig, m)
			backend := side.Features().Name

			r := h.do("PUT", "/v1/tenants/t8/limit", "", `{"concurrency":1}`)
			if r.status != 200 {
				t.Fatalf("PUT limit: %d %s", r.status, r.raw)
			}
			warned := strings.Contains(r.raw, "scrape")
			if warned == sb.tenants {
				t.Fatalf("PUT limit on %s: warnings %v, want a warning naming scrape: %v", backend, r.body["warnings"], !sb.tenants)
			}
			states := map[string]int{}
			for i := range 3 {
				r := h.do("POST", "/v1/jobs", "", `{"queue":"scrape","kind":"page","tenant":"t8"}`)
				if !sb.tenants {
					wantRefusal(t, r, "scrape", backend, queue.CapTenants)
					break
				}
				if r.status != 201 {
					t.Fatalf("job %d: %d %s", i, r.status, r.raw)
				}
				states[r.body["job"].(map[string]any)["state"].(string)]++
			}
			if sb.tenants && (states["pending"] != 1 || states["waiting"] != 2) {
				t.Fatalf("states %v, want one pending and two waiting", states)
			}
			if r := h.do("POST", "/v1/jobs", "", `{"queue":"home","kind":"page","tenant":"t8"}`); r.status != 201 {
				t.Fatalf("job on the default: %d %s", r.status, r.raw)
			}

			r = h.do("POST", "/v1/groups", "", `{"id":"crawl","max_concurrency":2}`)
			if r.status != 201 || !strings.Contains(r.raw, "scrape") {
				t.Fatalf("POST group: %d %s, want 201 with a warning naming scrape", r.status, r.raw)
			}
			r = h.do("POST", "/v1/jobs", "", `{"queue":"scrape","kind":"page","group":"crawl"}`)
			wantRefusal(t, r, "scrape", backend, queue.CapGroups)
		})
	}
}

func wantRefusal(t *testing.T, r reply, q, backend string, c queue.Capability) {
	t.Helper()
	detail, _ := r.body["detail"].(string)
	if r.status != 400 {
		t.Fatalf("status %d, want 400: %s", r.status, r.raw)
	}
	for _, want := range []string{"queue " + q, "backend " + backend, c.String()} {
		if !strings.Contains(detail, want) {
			t.Fatalf("detail %q does not name %q", detail, want)
		}
	}
}
