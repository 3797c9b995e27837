package queuetest

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/webhook"
)

const testSecret = "s3cret"

// receiver is an httptest webhook receiver that records every request and
// answers with what its reply function says.
type receiver struct {
	*httptest.Server
	mu    sync.Mutex
	got   []received
	reply func(n int, r received) int // n counts requests from 1
}

// received is one request as the receiver saw it.
type received struct {
	ID, Type, Signature string
	Attempt             int
	Body                []byte
	Event               queue.Event
}

func newReceiver(t *testing.T, reply func(n int, r received) int) *receiver {
	t.Helper()
	rc := &receiver{reply: reply}
	rc.Server = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	in := received{
		ID: r.Header.Get(webhook.EventIDHeader), Type: r.Header.Get(webhook.EventTypeHeader),
		Signature: r.Header.Get(webhook.SignatureHeader), Body: body,
	}
	in.Attempt, _ = strconv.Atoi(r.Header.Get(webhook.AttemptHeader))
	_ = json.Unmarshal(body, &in.Event)
	rc.mu.Lock()
	rc.got = append(rc.got, in)
	n := len(rc.got)
	rc.mu.Unlock()
	code := http.StatusNoContent
	if rc.reply != nil {
		code = rc.reply(n, in)
	}
	w.WriteHeader(code)
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// countByID counts the requests per event id.
func (rc *receiver) countByID() map[string]int {
	out := map[string]int{}
	for _, r := range rc.requests() {
		out[r.ID]++
	}
	return out
}

// sub is a subscription to rc with the test secret.
func (rc *receiver) sub(name string, events ...string) webhook.Subscription {
	return webhook.Subscription{Name: name, URL: rc.URL + "/hook", Secret: testSecret, Events: events}
}

// dispatcher makes a dispatcher for tests: receivers on 127.0.0.1 are
// allowed, retries wait exactly one minute, nothing is logged.
func (h *outboxHarness) dispatcher(t *testing.T, cfg webhook.Config) *webhook.Dispatcher {
	t.Helper()
	cfg.Guard.AllowAll = true
	return h.guardedDispatcher(t, cfg)
}

// guardedDispatcher is dispatcher with cfg.Guard as it is.
func (h *outboxHarness) guardedDispatcher(t *testing.T, cfg webhook.Config) *webhook.Dispatcher {
	t.Helper()
	if cfg.Backoff == nil {
		cfg.Backoff = func(int, error) time.Duration { return time.Minute }
	}
	if cfg.Clock == nil {
		cfg.Clock = h.Clock
	}
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	d, err := webhook.New(h.Outbox, cfg)
	if err != nil {
		t.Fatalf("webhook.New: %v", err)
	}
	return d
}

// dispatchOnce runs one DispatchOnce and checks how many events it claimed.
func dispatchOnce(t *testing.T, d *webhook.Dispatcher, want int) {
	t.Helper()
	n, err := d.DispatchOnce(context.Background())
	if err != nil || n != want {
		t.Fatalf("DispatchOnce = %d, %v; want %d events", n, err, want)
	}
}

// log reads the delivery log (newest first) as "status/outcome/attempt".
func (h *outboxHarness) log(t *testing.T, f backend.DeliveryFilter) []string {
	t.Helper()
	var out []string
	for _, d := range h.allDeliveries(t, f) {
		out = append(out, strconv.Itoa(d.Status)+"/"+string(d.Outcome)+"/"+strconv.Itoa(d.Attempt))
	}
	return out
}

func testWebhooks(t *testing.T, f Factory) {
	runTests(t, f, []test{
		{"Signed", nil, testWebhookSigned},
		{"RetryThenSuccess", nil, testWebhookRetry},
		{"GiveUp", nil, testWebhookGiveUp},
		{"Gone", nil, testWebhookGone},
		{"Filter", nil, testWebhookFilter},
		{"Refused", nil, testWebhookRefused},
		{"SlowReceiver", nil, testWebhookSlowReceiver},
		{"TwoDispatchers", nil, testWebhookTwoDispatchers},
		{"Crash", nil, testWebhookCrash},
	})
}

// testWebhookSigned checks the request: body, headers and a signature that
// webhook.Verify accepts.
func testWebhookSigned(t *testing.T, f Factory) {
	t.Parallel()
	h := newOutboxHarness(t, f)
	rc := newReceiver(t, nil)
	d := h.dispatcher(t, webhook.Config{Subscriptions: []webhook.Subscription{rc.sub("a")}})
	id := h.completeOne(t)
	dispatchOnce(t, d, 1)
	got := rc.requests()
	if len(got) != 1 {
		t.Fatalf("receiver got %d requests, want 1", len(got))
	}
	r := got[0]
	e := r.Event
	if e.JobID != id || e.Type != queue.EventJobCompleted || r.ID != e.ID || r.Type != "job.completed" || r.Attempt != 1 {
		t.Errorf("request = id %q type %q attempt %d, event %+v; want job %s completed, attempt 1", r.ID, r.Type, r.Attempt, e, id)
	}
	if err := webhook.Verify(testSecret, r.Signature, r.Body, time.Minute, h.Clock.Now()); err != nil {
		t.Errorf("Verify(%q): %v", r.Signature, err)
	}
	if err := webhook.Verify("other", r.Signature, r.Body, time.Minute, h.Clock.Now()); err == nil {
		t.Errorf("Verify with the wrong secret succeeded")
	}
	if got, want := h.log(t, backend.DeliveryFilter{JobID: id}), []string{"204/delivered/1"}; !equalStrings(got, want) {
		t.Errorf("delivery log = %v, want %v", got, want)
	}
	h.Clock.Advance(time.Hour)
	dispatchOnce(t, d, 0) // acknowledged: gone from the outbox
}

// testWebhookRetry: 500, 500, then 200; each retry waits for its backoff.
func testWebhookRetry(t *testing.T, f Factory) {
	t.Parallel()
	h := newOutboxHarness(t, f)
	rc := newReceiver(t, func(n int, _ received) int {
		if n < 3 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	d := h.dispatcher(t, webhook.Config{Subscriptions: []webhook.Subscription{rc.sub("a")}})
	id := h.completeOne(t)
	dispatchOnce(t, d, 1)
	dispatchOnce(t, d, 0) // waiting for its backoff
	h.Clock.Advance(time.Minute)
	dispatchOnce(t, d, 1)
	h.Clock.Advance(time.Minute)
	dispatchOnce(t, d, 1)
	h.Clock.Advance(time.Hour)
	dispatchOnce(t, d, 0)
	got := rc.requests()
	if len(got) != 3 {
		t.Fatalf("receiver got %d requests, want 3", len(got))
	}
	for i, r := range got {
		if r.ID != got[0].ID || r.Attempt != i+1 {
			t.Errorf("request %d: id %s attempt %d, want id %s attempt %d", i, r.ID, r.Attempt, got[0].ID, i+1)
		}
	}
	want := []string{"200/delivered/3", "500/retry/2", "500/retry/1"}
	for _, f := range []backend.DeliveryFilter{{JobID: id}, {Subscription: "a"}} {
		if got := h.log(t, f); !equalStrings(got, want) {
			t.Errorf("delivery log %+v = %v, want %v", f, got, want)
		}
	}
}

// testWebhookGiveUp: after MaxAttempts failures the event is dropped.
func testWebhookGiveUp(t *testing.T, f Factory) {
	t.Parallel()
	h := newOutboxHarness(t, f)
	rc := newReceiver(t, func(int, received) int { return http.StatusBadGateway })
	d := h.dispatcher(t, webhook.Config{Subscriptions: []webhook.Subscription{rc.sub("a")}, MaxAttempts: 2})
	id := h.completeOne(t)
	dispatchOnce(t, d, 1)
	h.Clock.Advance(time.Minute)
	dispatchOnce(t, d, 1)
	h.Clock.Advance(time.Hour)
	dispatchOnce(t, d, 0)
	if got, want := h.log(t, backend.DeliveryFilter{JobID: id}), []string{"502/failed/2", "502/retry/1"}; !equalStrings(got, want) {
		t.Errorf("delivery log = %v, want %v", got, want)
	}
}

// testWebhookGone: 410 stops for good and disables the subscription,
// while another subscription keeps receiving.
func testWebhookGone(t *testing.T, f Factory) {
	t.Parallel()
	h := newOutboxHarness(t, f)
	gone := newReceiver(t, func(int, received) int { return http.StatusGone })
	ok := newReceiver(t, nil)
	var onGone []string
	d := h.dispatcher(t, webhook.Config{
		Subscriptions: []webhook.Subscription{gone.sub("gone"), ok.sub("ok")},
		OnGone:        func(s webhook.Subscription) { onGone = append(onGone, s.Name) },
	})
	first := h.completeOne(t)
	dispatchOnce(t, d, 1)
	h.completeOne(t)
	dispatchOnce(t, d, 1)
	h.Clock.Advance(time.Hour)
	dispatchOnce(t, d, 0)
	if n := len(gone.requests()); n != 1 {
		t.Errorf("the 410 receiver got %d requests, want 1", n)
	}
	if n := len(ok.requests()); n != 2 {
		t.Errorf("the other receiver got %d requests, want 2", n)
	}
	if got := d.Disabled(); !equalStrings(got, []string{"gone"}) || !equalStrings(onGone, []string{"gone"}) {
		t.Errorf("Disabled() = %v, OnGone calls %v; want [gone]", got, onGone)
	}
	if got, want := h.log(t, backend.DeliveryFilter{Subscription: "gone"}), []string{"410/gone/1"}; !equalStrings(got, want) {
		t.Errorf("log of the 410 subscription = %v, want %v (job %s)", got, want, first)
	}
}

// testWebhookFilter: a subscription gets only the event types it wants.
func testWebhookFilter(t *testing.T, f Factory) {
	t.Parallel()
	h := newOutboxHarness(t, f)
	failedOnly := newReceiver(t, nil)
	all := newReceiver(t, nil)
	d := h.dispatcher(t, webhook.Config{Subscriptions: []webhook.Subscription{
		failedOnly.sub("failed", "job.failed"), all.sub("all", webhook.AllEvents),
	}})
	h.completeOne(t)
	j := h.enqueue(t, spec(QueueQ, "k"))
	l := h.leaseOne(t, QueueQ)
	if _, err := h.Backend.Fail(context.Background(), j.ID, l.Token, backend.Failure{Error: "boom", Permanent: true}); err != nil {
		t.Fatal(err)
	}
	dispatchOnce(t, d, 2)
	if got := failedOnly.requests(); len(got) != 1 || got[0].Type != "job.failed" || got[0].Event.Error != "boom" {
		t.Errorf("job.failed subscription got %+v, want the one failure", got)
	}
	if n := len(all.requests()); n != 2 {
		t.Errorf("* subscription got %d requests, want 2", n)
	}
}

// testWebhookRefused: the guard refuses a receiver on 127.0.0.1, whether
// named by its address or by a name that resolves to it; nothing is sent
// and the attempt is logged as refused. Allowing the prefix lets it through,
// which shows the name really was resolved by the injected resolver.
func testWebhookRefused(t *testing.T, f Factory) {
	t.Parallel()
	rc := newReceiver(t, nil)
	_, port, _ := net.SplitHostPort(rc.Listener.Addr().String())
	toLoopback := func(ctx context.Context, host string) ([]netip.Addr, error) {
		if host != "hooks.example.com" {
			t.Errorf("resolver asked for %q", host)
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	cases := []struct {
		name, url string
		guard     webhook.Guard
		resolve   webhook.Resolver
		want      string
	}{
		{"address", rc.URL, webhook.Guard{}, nil, "0/refused/1"},
		{"localhost", "http://localhost:" + port, webhook.Guard{}, nil, "0/refused/1"},
		{"rebinding name", "http://hooks.example.com:" + port, webhook.Guard{}, toLoopback, "0/refused/1"},
		{"allowed", "http://hooks.example.com:" + port, webhook.Guard{Allow: loopback}, toLoopback, "204/delivered/1"},
	}
	sent := 0
	for _, c := range cases {
		h := newOutboxHarness(t, f)
		d := h.guardedDispatcher(t, webhook.Config{
			Subscriptions: []webhook.Subscription{{Name: "a", URL: c.url}}, Guard: c.guard, Resolve: c.resolve,
		})
		id := h.completeOne(t)
		dispatchOnce(t, d, 1)
		if got := h.log(t, backend.DeliveryFilter{JobID: id}); !equalStrings(got, []string{c.want}) {
			t.Errorf("%s: delivery log = %v, want [%s]", c.name, got, c.want)
		}
		if c.want != "0/refused/1" {
			sent++
		}
		if n := len(rc.requests()); n != sent {
			t.Errorf("%s: receiver got %d requests, want %d", c.name, n, sent)
		}
		h.Clock.Advance(time.Hour)
		dispatchOnce(t, d, 0) // a refusal is final: the event is acknowledged
	}
}
