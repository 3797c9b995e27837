package mux_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/amqptest"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/amqpqueue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/mux"
	"github.com/sluicehq/sluice/queue/pgqueue"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/redisqueue"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// routed is one kind of backend a queue may be routed to.
type routed struct {
	name string
	open func(t *testing.T, clk clock.Clock) backend.Backend
}

// routedKinds are the backends the enforcement tests route "side" to: the
// stores with every capability, a store stripped of tenants and groups
// (any backend declaring less), the RabbitMQ lane when a broker is there,
// Postgres (no tenants or groups yet) when one is, and the lane with a
// Scheduler.
var routedKinds = []routed{
	{"sqlite", func(t *testing.T, clk clock.Clock) backend.Backend { return openSQLite(t, clk, sqlitequeue.Options{}) }},
	{"redis", openMiniredis},
	{"plain", func(t *testing.T, clk clock.Clock) backend.Backend {
		return plain{openSQLite(t, clk, sqlitequeue.Options{}), queue.AllCapabilities.Without(queue.CapTenants, queue.CapGroups, queue.CapTenantList)}
	}},
	{"lane", func(t *testing.T, clk clock.Clock) backend.Backend {
		amqptest.URL(t, "the tests on the RabbitMQ lane")
		return openLane(t, clk, []string{"side"})
	}},
	{"postgres", func(t *testing.T, clk clock.Clock) backend.Backend {
		url := pgtest.URL(t)
		s, err := pgqueue.Open(context.Background(), url, pgqueue.Options{Schema: pgtest.Schema(t, url), Clock: clk, MaxConns: 4})
		if err != nil {
			t.Fatalf("pgqueue.Open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}},
	{"lane+scheduler", func(t *testing.T, clk clock.Clock) backend.Backend {
		u := amqptest.URL(t, "the tests on the RabbitMQ lane")
		prefix := amqptest.Prefix(t, u, "mux", "side")
		b, err := amqpqueue.New(u, amqpqueue.Options{Prefix: prefix, Clock: clk, LeaseWait: 300 * time.Millisecond,
			ConnectionName: "sluice-test " + prefix, Scheduler: openSQLite(t, clk, sqlitequeue.Options{})})
		if err != nil {
			t.Fatalf("amqpqueue.New: %v", err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}},
}

func openMiniredis(t *testing.T, clk clock.Clock) backend.Backend {
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { c.Close() })
	b, err := redisqueue.New(c, redisqueue.Options{Clock: clk, DisableBreaker: true})
	if err != nil {
		t.Fatalf("redisqueue.New: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestNoSilentBypass checks, for every routed backend and each scheduling
// capability, that a job whose tenant or group needs scheduling its
// queue's backend cannot give is refused with a *queue.NotEnforcedError
// naming the queue, the backend and the capability, and that the same job
// is accepted (and scheduled) where it can be.
func TestNoSilentBypass(t *testing.T) {
	t.Parallel()
	type tc struct {
		name    string
		prepare func(t *testing.T, c *queue.Client)
		spec    queue.JobSpec
		need    queue.Capability // refused on a backend without it; 0: accepted everywhere
	}
	ctx := context.Background()
	cases := []tc{
		{"limited tenant", func(t *testing.T, c *queue.Client) { mustDo(t, c.SetTenantLimit(ctx, "t8", 1)) },
			queue.JobSpec{Queue: "side", Kind: "k", Tenant: "t8"}, queue.CapTenants},
		{"default limit", func(t *testing.T, c *queue.Client) { mustDo(t, c.SetTenantDefaults(ctx, queue.TenantConfig{Limit: 3})) },
			queue.JobSpec{Queue: "side", Kind: "k", Tenant: "any"}, queue.CapTenants},
		{"paused tenant", func(t *testing.T, c *queue.Client) {
			_, err := c.BackOff(ctx, queue.TenantScope("t9"), time.Hour)
			mustDo(t, err)
		}, queue.JobSpec{Queue: "side", Kind: "k", Tenant: "t9"}, queue.CapTenants},
		{"unlimited tenant", func(*testing.T, *queue.Client) {}, queue.JobSpec{Queue: "side", Kind: "k", Tenant: "free"}, 0},
		{"group", func(t *testing.T, c *queue.Client) {
			_, err := c.CreateGroup(ctx, queue.GroupSpec{ID: "crawl", MaxConcurrency: 1})
			mustDo(t, err)
		}, queue.JobSpec{Queue: "side", Kind: "k", Group: "crawl"}, queue.CapGroups},
	}
	for _, kind := range routedKinds {
		for _, c := range cases {
			t.Run(kind.name+"/"+c.name, func(t *testing.T) {
				clk := clock.NewFake(queuetest.Epoch)
				side := kind.open(t, clk)
				m := newMux(t, openSQLite(t, clk, sqlitequeue.Options{}), mux.Route{Name: "side", Backend: side, Queues: []string{"side"}})
				cl := queue.NewClient(m)
				c.prepare(t, cl)
				_, err := cl.Enqueue(ctx, c.spec)
				refused := c.need != 0 && (!backend.CapabilitiesOf(side).Has(c.need) || c.need == queue.CapGroups)
				if !refused {
					if err != nil {
						t.Fatalf("Enqueue on %s: %v, want it accepted", side.Features().Name, err)
					}
					return
				}
				var ne *queue.NotEnforcedError
				if !errors.As(err, &ne) || !errors.Is(err, queue.ErrNotEnforced) || !errors.Is(err, queue.ErrUnsupported) {
					t.Fatalf("Enqueue on %s = %v, want a *queue.NotEnforcedError", side.Features().Name, err)
				}
				if ne.Queue != "side" || ne.Backend != side.Features().Name || ne.Feature != c.need {
					t.Fatalf("error names queue %q, backend %q, %s; want side, %s, %s", ne.Queue, ne.Backend, ne.Feature, side.Features().Name, c.need)
				}
				// The same job on the default's queue is scheduled there.
				spec := c.spec
				spec.Queue = "home"
				if _, err := cl.Enqueue(ctx, spec); err != nil {
					t.Fatalf("Enqueue on the default: %v", err)
				}
			})
		}
	}
}

// TestTenantLimitReachesRoutes checks that a limit set through the router
// holds on a routed backend that schedules by tenant.
func TestTenantLimitReachesRoutes(t *testing.T) {
	t.Parallel()
	for _, kind := range slices.Concat(routedKinds[:2], routedKinds[5:]) {
		t.Run(kind.name, func(t *testing.T) {
			ctx := context.Background()
			clk := clock.NewFake(queuetest.Epoch)
			m := newMux(t, openSQLite(t, clk, sqlitequeue.Options{}), mux.Route{Name: "side", Backend: kind.open(t, clk), Queues: []string{"side"}})
			cl := queue.NewClient(m)
			mustDo(t, cl.SetTenantLimit(ctx, "t8", 1))
			var states []queue.State
			for range 3 {
				j, err := cl.Enqueue(ctx, queue.JobSpec{Queue: "side", Kind: "k", Tenant: "t8"})
				mustDo(t, err)
				states = append(states, j.State)
			}
			if want := []queue.State{queue.StatePending, queue.StateWaiting, queue.StateWaiting}; !slices.Equal(states, want) {
				t.Fatalf("states %v, want %v", states, want)
			}
		})
	}
}

// TestGaps checks that the router says where tenant and group settings do
// not hold.
func TestGaps(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(queuetest.Epoch)
	bare := plain{openSQLite(t, clk, sqlitequeue.Options{}), queue.NewCapabilities(queue.CapDelay)}
	full := openSQLite(t, clk, sqlitequeue.Options{})
	m := newMux(t, openSQLite(t, clk, sqlitequeue.Options{}),
		mux.Route{Name: "bare", Backend: bare, Queues: []string{"scrape", "fetch"}},
		mux.Route{Name: "full", Backend: full, Queues: []string{"mail"}})
	cl := queue.NewClient(m)
	tg := cl.Gaps(queue.CapTenants)
	if len(tg) != 1 || tg[0].Backend != "plain" || !slices.Equal(tg[0].Queues, []string{"fetch", "scrape"}) || tg[0].Missing != queue.CapTenants {
		t.Fatalf("tenant gaps %+v, want plain's fetch and scrape", tg)
	}
	gg := cl.Gaps(queue.CapGroups)
	if len(gg) != 2 || !slices.Equal(gg[1].Queues, []string{"mail"}) {
		t.Fatalf("group gaps %+v, want both routes", gg)
	}
	if got := queue.Gaps(full, queue.CapTenants); got != nil {
		t.Fatalf("a plain backend has gaps %v", got)
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
