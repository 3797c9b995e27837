package webhook_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
	"github.com/sluicehq/sluice/queue/webhook"
)

var (
	epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
)

// openBackend opens an SQLite queue with its outbox on (or off).
func openBackend(t *testing.T, clk clock.Clock, outbox bool) *sqlitequeue.Backend {
	t.Helper()
	b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "q.db"), sqlitequeue.Options{Clock: clk, Outbox: outbox})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// complete enqueues, leases and completes one job and returns its id.
func complete(t *testing.T, b backend.Backend) string {
	t.Helper()
	ctx := context.Background()
	j, err := queue.NewClient(b).Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k"})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, WorkerID: "w", Max: 1, LeaseFor: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("Lease = %d jobs, %v", len(ls), err)
	}
	if err := b.Complete(ctx, j.ID, ls[0].Token, nil); err != nil {
		t.Fatal(err)
	}
	return j.ID
}

// server is an httptest receiver answering with reply; it counts requests
// and keeps their headers.
type server struct {
	*httptest.Server
	mu      sync.Mutex
	headers []http.Header
}

func newServer(t *testing.T, reply func(w http.ResponseWriter, r *http.Request)) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()
		if reply != nil {
			reply(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.headers)
}

func newDispatcher(t *testing.T, ob backend.Outbox, cfg webhook.Config) *webhook.Dispatcher {
	t.Helper()
	cfg.Guard.AllowAll = true
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	if cfg.Backoff == nil {
		cfg.Backoff = func(int, error) time.Duration { return time.Minute }
	}
	d, err := webhook.New(ob, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func dispatch(t *testing.T, d *webhook.Dispatcher, want int) {
	t.Helper()
	if n, err := d.DispatchOnce(context.Background()); err != nil || n != want {
		t.Fatalf("DispatchOnce = %d, %v; want %d", n, err, want)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	b := openBackend(t, nil, true)
	sub := webhook.Subscription{Name: "a", URL: "https://example.com"}
	cases := []struct {
		name string
		ob   backend.Outbox
		cfg  webhook.Config
		want string
	}{
		{"no outbox", nil, webhook.Config{}, "needs an outbox"},
		{"short lease", b, webhook.Config{Timeout: time.Minute, LeaseFor: 90 * time.Second}, "LeaseFor must be at least twice"},
		{"bad subscription", b, webhook.Config{Subscriptions: []webhook.Subscription{{Name: "a", URL: "ftp://x"}}}, "Subscriptions[0]"},
		{"same name twice", b, webhook.Config{Subscriptions: []webhook.Subscription{sub, sub}}, `Name "a" is used twice`},
	}
	for _, c := range cases {
		_, err := webhook.New(c.ob, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: New = %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

func TestRunNeedsTheOutboxOn(t *testing.T) {
	t.Parallel()
	d := newDispatcher(t, openBackend(t, nil, false), webhook.Config{})
	err := d.Run(context.Background())
	if !errors.Is(err, queue.ErrOutboxOff) {
		t.Fatalf("Run with the outbox off = %v, want ErrOutboxOff", err)
	}
	if _, err := d.DispatchOnce(context.Background()); !errors.Is(err, queue.ErrOutboxOff) {
		t.Fatalf("DispatchOnce with the outbox off = %v, want ErrOutboxOff", err)
	}
}

func TestRunTwice(t *testing.T) {
	t.Parallel()
	b := openBackend(t, nil, true)
	arrived := make(chan struct{}, 1)
	srv := newServer(t, func(http.ResponseWriter, *http.Request) { arrived <- struct{}{} })
	d := newDispatcher(t, b, webhook.Config{
		Subscriptions: []webhook.Subscription{{Name: "a", URL: srv.URL}}, PollInterval: time.Millisecond,
	})
	stop := testutil.Start(t, d)
	complete(t, b)
	<-arrived // the first Run is running
	second := d.Run(context.Background())
	stop()
	if second == nil || !strings.Contains(second.Error(), "already running") {
		t.Fatalf("second Run = %v, want already running", second)
	}
}

// TestShutdownReleasesInFlight stops a dispatcher while its receiver holds
// the request: after ShutdownTimeout the attempt is cancelled, not logged,
// and the event is due again at once.
func TestShutdownReleasesInFlight(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(epoch)
	b := openBackend(t, clk, true)
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	})
	t.Cleanup(func() { close(release) }) // before the server closes
	d := newDispatcher(t, b, webhook.Config{
		Subscriptions: []webhook.Subscription{{Name: "a", URL: srv.URL}},
		PollInterval:  time.Millisecond, ShutdownTimeout: time.Millisecond, LogRetention: -1,
	})
	complete(t, b)
	stop := testutil.Start(t, d)
	<-arrived
	stop()
	p, err := b.Deliveries(context.Background(), backend.DeliveryFilter{})
	if err != nil || len(p.Deliveries) != 0 {
		t.Fatalf("delivery log = %+v, %v; want nothing for a cancelled attempt", p, err)
	}
	cs, err := b.ClaimEvents(context.Background(), 10, time.Minute)
	if err != nil || len(cs) != 1 || cs[0].Progress["a"].Attempts != 0 {
		t.Fatalf("ClaimEvents after shutdown = %+v, %v; want the event back, no attempt counted", cs, err)
	}
}

// TestHostBudget: an attempt the host's budget cannot cover is not sent and
// not counted; the event comes back after its backoff.
func TestHostBudget(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(epoch)
	b := openBackend(t, clk, true)
	srv := newServer(t, nil)
	budgets, err := flow.NewHostBudgets(1, time.Hour, flow.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	d := newDispatcher(t, b, webhook.Config{
		Subscriptions: []webhook.Subscription{{Name: "a", URL: srv.URL}},
		HostBudget:    budgets.For, Clock: clk, Concurrency: 1,
	})
	complete(t, b)
	second := complete(t, b)
	dispatch(t, d, 1)
	dispatch(t, d, 1) // the budget is spent for the hour: not sent
	if n := srv.count(); n != 1 {
		t.Fatalf("receiver got %d requests, want 1", n)
	}
	dispatch(t, d, 0)
	clk.Advance(time.Hour)
	dispatch(t, d, 1)
	p, err := b.Deliveries(context.Background(), backend.DeliveryFilter{JobID: second})
	if err != nil || len(p.Deliveries) != 1 || p.Deliveries[0].Attempt != 1 || p.Deliveries[0].Outcome != backend.DeliveryOK {
		t.Fatalf("second job's log = %+v, %v; want one delivered attempt 1", p, err)
	}
}

// TestRetryAfter: a 503 with a Retry-After longer than the backoff delays
// the next attempt to it.
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(epoch)
	b := openBackend(t, clk, true)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "600")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	d := newDispatcher(t, b, webhook.Config{Subscriptions: []webhook.Subscription{{Name: "a", URL: srv.URL}}, Clock: clk})
	complete(t, b)
	dispatch(t, d, 1)
	clk.Advance(time.Minute) // the backoff alone
	dispatch(t, d, 0)
	clk.Advance(9 * time.Minute)
	dispatch(t, d, 1)
}

// TestHeaders: the request's headers, and no signature without a secret.
func TestHeaders(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(epoch)
	b := openBackend(t, clk, true)
	srv := newServer(t, nil)
	d := newDispatcher(t, b, webhook.Config{Subscriptions: []webhook.Subscription{
		{Name: "signed", URL: srv.URL, Secret: "k"}, {Name: "unsigned", URL: srv.URL},
	}, Clock: clk})
	complete(t, b)
	dispatch(t, d, 1)
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.headers) != 2 {
		t.Fatalf("receiver got %d requests, want 2", len(srv.headers))
	}
	signed := 0
	for _, h := range srv.headers {
		id := h.Get(webhook.EventIDHeader)
		sub := "unsigned"
		if h.Get(webhook.SignatureHeader) != "" {
			sub = "signed"
		}
		key := id + ":" + sub // one per event and subscription
		if !strings.HasPrefix(id, "evt_") || h.Get("Idempotency-Key") != key || h.Get(webhook.DeliveryIDHeader) != key ||
			h.Get("Content-Type") != "application/json" ||
			h.Get(webhook.EventTypeHeader) != "job.completed" || h.Get(webhook.AttemptHeader) != "1" {
			t.Errorf("headers = %v", h)
		}
		if h.Get(webhook.SignatureHeader) != "" {
			signed++
		}
	}
	if signed != 1 {
		t.Errorf("%d requests signed, want 1 (the subscription with a secret)", signed)
	}
}
