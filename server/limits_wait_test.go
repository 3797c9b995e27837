package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
	"github.com/sluicehq/sluice/server/config"
)

const waitConfig = `
limits:
  scenes:
    team:
      subject: [team]
      policies:
        send: {limits: [{quota: 1, window: 1s, algorithm: token-bucket, burst: 1}]}
`

// newWaitHarness serves waitConfig with the limit store and the server's
// waits on one fake clock, so a test moves time for both.
func newWaitHarness(t *testing.T) *harness {
	t.Helper()
	cfg, err := config.Parse([]byte(waitConfig), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(clock.Real.Now())
	store := memlimit.New(memlimit.Options{Clock: clk, SweepInterval: -1})
	t.Cleanup(func() { store.Close() })
	srv, err := New(Options{Config: cfg, Limits: store, Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &harness{t: t, srv: srv, http: hs, clk: clk}
}

// send posts a wait_ms decision on ctx and delivers its status and body.
func (h *harness) sendWait(ctx context.Context, waitMS int) <-chan reply {
	out := make(chan reply, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", h.http.URL+"/v1/limits/team/send",
			strings.NewReader(`{"subject":{"team":"a"},"wait_ms":`+itoa(waitMS)+`}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := h.http.Client().Do(req)
		if err != nil {
			out <- reply{status: -1, raw: err.Error()}
			return
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		r := reply{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
		_ = json.Unmarshal(raw, &r.body)
		out <- r
	}()
	return out
}

func TestWaitEndsWhenTheSlotComes(t *testing.T) {
	t.Parallel()
	h := newWaitHarness(t)
	ctx := context.Background()
	if r := <-h.sendWait(ctx, 5000); r.status != 200 || r.body["waited_ms"] != nil && r.body["waited_ms"] != float64(0) {
		t.Fatalf("first: %d %s, want 200 at once", r.status, r.raw)
	}
	second := h.sendWait(ctx, 5000)
	h.clk.BlockUntil(1) // the server holds the next slot and sleeps until it
	select {
	case r := <-second:
		t.Fatalf("answered before the slot came: %d %s", r.status, r.raw)
	default:
	}
	h.clk.Advance(time.Second)
	r := <-second
	if r.status != 200 || r.body["allowed"] != true || r.body["waited_ms"] != float64(1000) {
		t.Fatalf("second: %d %s, want 200 after waiting 1000ms", r.status, r.raw)
	}
}

func TestWaitCancelledGivesTheSlotBack(t *testing.T) {
	t.Parallel()
	h := newWaitHarness(t)
	if r := <-h.sendWait(context.Background(), 5000); r.status != 200 {
		t.Fatalf("first: %d %s", r.status, r.raw)
	}
	// A caller reserves the slot 1s away, then goes away while waiting.
	ctx, cancel := context.WithCancel(context.Background())
	gone := h.sendWait(ctx, 5000)
	h.clk.BlockUntil(1)
	if got := resetAfter(h); got != 2000 {
		t.Fatalf("bucket while the slot is reserved: reset after %dms, want 2000", got)
	}
	cancel()
	if r := <-gone; r.status != -1 {
		t.Fatalf("cancelled caller got an answer: %d %s", r.status, r.raw)
	}
	testutil.Eventually(t, "the abandoned reservation to be given back", func() bool { return resetAfter(h) == 1000 })
	if n := h.clk.Waiters(); n != 0 {
		t.Errorf("%d timers still pending after the caller left", n)
	}
	// The next caller gets the slot the cancelled one held: 1s away,
	// within a 1.5s wait (it would be 2s away had the slot been kept).
	next := h.sendWait(context.Background(), 1500)
	h.clk.BlockUntil(1)
	h.clk.Advance(time.Second)
	if r := <-next; r.status != 200 || r.body["waited_ms"] != float64(1000) {
		t.Fatalf("next: %d %s, want 200 after 1000ms", r.status, r.raw)
	}
}

// resetAfter peeks at the bucket: how long until it is full again.
func resetAfter(h *harness) int64 {
	r := h.do("POST", "/v1/limits/team/send/peek", "", `{"subject":{"team":"a"}}`)
	limits, _ := r.body["limits"].([]any)
	if len(limits) != 1 {
		h.t.Fatalf("peek: %d %s", r.status, r.raw)
	}
	return int64(limits[0].(map[string]any)["reset_after_ms"].(float64))
}
