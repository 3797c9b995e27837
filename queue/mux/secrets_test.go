package mux_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/mux"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
	"github.com/sluicehq/sluice/queue/webhook"
)

// noSecrets is an SQLite backend whose Features leave out its tenant
// secrets, as a backend keeping none.
type noSecrets struct{ *sqlitequeue.Backend }

func (n noSecrets) Features() backend.Features {
	f := n.Backend.Features()
	f.TenantSecrets = nil
	return f
}

// TestTenantSecretsFollowTheDefault checks that the router serves the
// tenants' webhook secrets when its default keeps them, storing them
// there, and leaves the part out (refusing its calls) when it does not.
func TestTenantSecretsFollowTheDefault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(queuetest.Epoch)
	side := func() mux.Route {
		return mux.Route{Name: "side", Backend: openSQLite(t, clk, sqlitequeue.Options{}), Queues: []string{"s"}}
	}
	def := openSQLite(t, clk, sqlitequeue.Options{Outbox: true})
	m := newMux(t, def, side())
	ts := m.Features().TenantSecrets
	if ts == nil {
		t.Fatal("Features().TenantSecrets is nil over a default that keeps them")
	}
	if err := ts.SetTenantSecret(ctx, "acme", "acme-secret"); err != nil {
		t.Fatal(err)
	}
	if got, err := def.TenantSecret(ctx, "acme"); err != nil || got != "acme-secret" {
		t.Errorf("default's TenantSecret = %q, %v; want the secret set through the router", got, err)
	}
	if got, err := ts.TenantSecret(ctx, "acme"); err != nil || got != "acme-secret" {
		t.Errorf("router's TenantSecret = %q, %v; want acme-secret", got, err)
	}

	bare := newMux(t, noSecrets{openSQLite(t, clk, sqlitequeue.Options{})}, side())
	if bare.Features().TenantSecrets != nil {
		t.Error("Features().TenantSecrets is set over a default that keeps none")
	}
	if err := bare.SetTenantSecret(ctx, "acme", "x"); !errors.Is(err, queue.ErrUnsupported) {
		t.Errorf("SetTenantSecret = %v, want ErrUnsupported", err)
	}
}

// TestJobWebhookSignedWithTenantSecretThroughRouter delivers a job's
// webhook by a dispatcher reading jobs and secrets through the router:
// the delivery is signed with the tenant's own secret, not the default.
func TestJobWebhookSignedWithTenantSecretThroughRouter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(queuetest.Epoch)
	m := newMux(t, openSQLite(t, clk, sqlitequeue.Options{Outbox: true}),
		mux.Route{Name: "side", Backend: openSQLite(t, clk, sqlitequeue.Options{}), Queues: []string{"s"}})
	if err := m.SetTenantSecret(ctx, "acme", "acme-secret"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var sigs []string
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		sigs, bodies = append(sigs, r.Header.Get(webhook.SignatureHeader)), append(bodies, b)
	}))
	defer srv.Close()

	j, err := queue.NewClient(m).Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k", Tenant: "acme", Webhook: &queue.Webhook{URL: srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := m.Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, WorkerID: "w", Max: 1, LeaseFor: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("Lease = %d jobs, %v", len(ls), err)
	}
	if err := m.Complete(ctx, j.ID, ls[0].Token, nil); err != nil {
		t.Fatal(err)
	}
	d, err := webhook.New(m, webhook.Config{Clock: clk, Guard: webhook.Guard{AllowAll: true},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Jobs:   &webhook.JobHooks{Backend: m, Secret: "server-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := d.DispatchOnce(ctx); err != nil || n != 1 {
		t.Fatalf("DispatchOnce = %d, %v; want 1", n, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sigs) != 1 {
		t.Fatalf("receiver got %d requests, want 1", len(sigs))
	}
	if err := webhook.Verify("acme-secret", sigs[0], bodies[0], time.Minute, clk.Now()); err != nil {
		t.Fatalf("signature under the tenant's secret: %v", err)
	}
}
