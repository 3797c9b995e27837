package httplimit_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/httplimit"
)

type response struct {
	status int
	header http.Header
	body   []byte
}

func do(t *testing.T, c *http.Client, req *http.Request) response {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, body}
}

// serve runs one request from remote through h.
func serve(h http.Handler, remote string) response {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = remote
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return response{w.Code, w.Header(), w.Body.Bytes()}
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, "ok")
})

// fields picks the headers a test compares.
func fields(h http.Header, names ...string) map[string]string {
	out := map[string]string{}
	for _, n := range names {
		if v := h.Get(n); v != "" {
			out[n] = v
		}
	}
	return out
}

var allFields = []string{"RateLimit-Policy", "RateLimit", "Retry-After", "X-RateLimit-Limit",
	"X-RateLimit-Remaining", "X-RateLimit-Reset", "Content-Type"}

func equalFields(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestByIPAllowDeny(t *testing.T) {
	t.Parallel()
	store := newStore(t)
	h := httplimit.ByIP(store, "login", ratelimit.PerMinute(2), httplimit.Options{Logger: quietLogger()})(okHandler)
	// 20.5s past a minute boundary: windows start at each client's first
	// request, so the boundary changes nothing.
	store.clock.Advance(20*time.Second + 500*time.Millisecond)
	tests := []struct {
		advance    time.Duration
		remote     string
		wantStatus int
		wantFields map[string]string
		wantBody   string
	}{
		{0, "192.0.2.1:1", 200, map[string]string{"RateLimit-Policy": `"login";q=2;w=60`, "RateLimit": `"login";r=1;t=60`, "Content-Type": "text/plain"}, "ok"},
		{0, "192.0.2.1:2", 200, map[string]string{"RateLimit-Policy": `"login";q=2;w=60`, "RateLimit": `"login";r=0;t=60`, "Content-Type": "text/plain"}, "ok"},
		{0, "192.0.2.1:3", 429, map[string]string{"RateLimit-Policy": `"login";q=2;w=60`, "RateLimit": `"login";r=0;t=60`,
			"Retry-After": "60", "Content-Type": "application/problem+json"},
			`{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"Too many requests: 2 every 60 seconds"}` + "\n"},
		{0, "192.0.2.2:1", 200, map[string]string{"RateLimit-Policy": `"login";q=2;w=60`, "RateLimit": `"login";r=1;t=60`, "Content-Type": "text/plain"}, "ok"},
		// Past the minute boundary, 40s after the first request: still
		// inside its window.
		{40 * time.Second, "192.0.2.1:4", 429, map[string]string{"RateLimit-Policy": `"login";q=2;w=60`, "RateLimit": `"login";r=0;t=20`,
			"Retry-After": "20", "Content-Type": "application/problem+json"},
			`{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"Too many requests: 2 every 60 seconds"}` + "\n"},
		// A minute after the first request: a new window.
		{20 * time.Second, "192.0.2.1:5", 200, map[string]string{"RateLimit-Policy": `"login";q=2;w=60`, "RateLimit": `"login";r=1;t=60`, "Content-Type": "text/plain"}, "ok"},
	}
	for i, tt := range tests {
		store.clock.Advance(tt.advance)
		got := serve(h, tt.remote)
		if got.status != tt.wantStatus || string(got.body) != tt.wantBody {
			t.Errorf("request %d from %s: status %d body %q, want %d %q", i, tt.remote, got.status, got.body, tt.wantStatus, tt.wantBody)
		}
		if f := fields(got.header, allFields...); !equalFields(f, tt.wantFields) {
			t.Errorf("request %d from %s: headers %v, want %v", i, tt.remote, f, tt.wantFields)
		}
	}
}

// TestRequestsStraddlingAClockBoundary: 1 per second admits one request
// at .900 and refuses another 200ms later, with Retry-After and the
// RateLimit reset pointing at a second after the first; 1 per minute
// likewise across a minute boundary.
func TestRequestsStraddlingAClockBoundary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		limit      ratelimit.Limit
		first      time.Duration // past a boundary of the window
		wantReset  string        // RateLimit of the refused request
		wantRetry  string
		wantPolicy string
	}{
		{ratelimit.PerSecond(1), 900 * time.Millisecond, `"once";r=0;t=1`, "1", `"once";q=1;w=1`},
		{ratelimit.PerMinute(1), time.Minute - 100*time.Millisecond, `"once";r=0;t=60`, "60", `"once";q=1;w=60`},
	}
	for _, tt := range tests {
		store := newStore(t)
		h := httplimit.ByIP(store, "once", tt.limit, httplimit.Options{Logger: quietLogger()})(okHandler)
		store.clock.Advance(tt.first)
		if got := serve(h, "192.0.2.1:1"); got.status != 200 {
			t.Fatalf("%s: first request: status %d, want 200", tt.limit, got.status)
		}
		store.clock.Advance(200 * time.Millisecond)
		got := serve(h, "192.0.2.1:2")
		want := map[string]string{"RateLimit-Policy": tt.wantPolicy, "RateLimit": tt.wantReset,
			"Retry-After": tt.wantRetry, "Content-Type": "application/problem+json"}
		if f := fields(got.header, allFields...); got.status != 429 || !equalFields(f, want) {
			t.Errorf("%s: request 200ms later across a boundary: %d %v, want 429 %v", tt.limit, got.status, f, want)
		}
	}
}

// TestCostAboveQuotaAnswers422: a request costing more than the quota can
// never pass: 422 saying so, without Retry-After (a client honouring it
// would retry forever) or RateLimit fields, counting nothing.
func TestCostAboveQuotaAnswers422(t *testing.T) {
	t.Parallel()
	store := newStore(t)
	def := httplimit.IPDefinition("bulk", ratelimit.PerMinute(3), httplimit.Options{})
	def.Cost = func(r *http.Request) int64 { return int64(len(r.URL.Query()["item"])) }
	l, err := ratelimit.Define(store, def, ratelimit.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	h := httplimit.Middleware(l, httplimit.Options{Logger: quietLogger()})(okHandler)
	call := func(items int) response {
		r := httptest.NewRequest(http.MethodGet, "/?"+strings.Repeat("item=x&", items), nil)
		r.RemoteAddr = "192.0.2.1:1"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return response{w.Code, w.Header(), w.Body.Bytes()}
	}
	got := call(4)
	wantBody := `{"title":"Unprocessable Entity","status":422,"detail":"Cost 4 exceeds the quota: at most 3 every 60 seconds, so the request can never be admitted"}` + "\n"
	wantFields := map[string]string{"Content-Type": "application/problem+json"}
	if f := fields(got.header, allFields...); got.status != 422 || string(got.body) != wantBody || !equalFields(f, wantFields) {
		t.Errorf("cost 4 on a quota of 3: %d %v %s, want 422 %v %s", got.status, f, got.body, wantFields, wantBody)
	}
	if got := call(3); got.status != 200 || got.header.Get("RateLimit") != `"bulk";r=0;t=60` {
		t.Errorf("cost 3 after the refusal: %d %q, want 200 with the whole quota used by it", got.status, got.header.Get("RateLimit"))
	}
}

func TestByIPLegacyHeadersAndRounding(t *testing.T) {
	t.Parallel()
	store := newStore(t)
	h := httplimit.ByIP(store, "captcha", ratelimit.Per(1, 1500*time.Millisecond),
		httplimit.Options{LegacyHeaders: true, Logger: quietLogger()})(okHandler)
	serve(h, "192.0.2.1:1")
	store.clock.Advance(1499 * time.Millisecond) // 1ms left in the window
	got := serve(h, "192.0.2.1:1")
	want := map[string]string{
		"RateLimit-Policy": `"captcha";q=1;w=2`, "RateLimit": `"captcha";r=0;t=1`, "Retry-After": "1",
		"X-RateLimit-Limit": "1", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1",
		"Content-Type": "application/problem+json",
	}
	if f := fields(got.header, allFields...); got.status != 429 || !equalFields(f, want) {
		t.Errorf("status %d headers %v, want 429 %v", got.status, f, want)
	}
	if !strings.Contains(string(got.body), `"detail":"Too many requests: 1 every 1.5 seconds"`) {
		t.Errorf("body %s, want the detail for 1 every 1.5 seconds", got.body)
	}
}

func TestTrustedProxyChainEndToEnd(t *testing.T) {
	t.Parallel()
	store := newStore(t)
	opts := httplimit.Options{TrustedProxies: mustCIDRs(t, "127.0.0.1"), Logger: quietLogger()}
	srv := httptest.NewServer(httplimit.ByIP(store, "api", ratelimit.PerMinute(1), opts)(okHandler))
	defer srv.Close()
	tests := []struct {
		xff  string
		want int
	}{
		{"6.6.6.6, 203.0.113.50", 200},
		{"7.7.7.7, 203.0.113.50", 429}, // same client behind a different spoofed prefix
		{"203.0.113.51", 200},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set("X-Forwarded-For", tt.xff)
		if got := do(t, srv.Client(), req); got.status != tt.want {
			t.Errorf("XFF %q: status %d, want %d", tt.xff, got.status, tt.want)
		}
	}
}

func TestSpoofedHeadersShareThePeersCounter(t *testing.T) {
	t.Parallel()
	store := newStore(t)
	srv := httptest.NewServer(httplimit.ByIP(store, "api", ratelimit.PerMinute(1), httplimit.Options{Logger: quietLogger()})(okHandler))
	defer srv.Close()
	var got []int
	for _, spoof := range []string{"203.0.113.1", "203.0.113.2"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set("X-Forwarded-For", spoof)
		req.Header.Set("X-Real-IP", spoof)
		got = append(got, do(t, srv.Client(), req).status)
	}
	if got[0] != 200 || got[1] != 429 {
		t.Errorf("statuses %v, want [200 429]: spoofed headers from an untrusted peer must not pick the counter", got)
	}
}

func TestSwitch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		opts      httplimit.Options
		wantCalls int
		want      []int
	}{
		{name: "zero value enabled", want: []int{200, 429}, wantCalls: 2},
		{name: "disabled passes through", opts: httplimit.Options{Disabled: true}, want: []int{200, 200}, wantCalls: 0},
		{name: "force applies when disabled", opts: httplimit.Options{Disabled: true, Force: true}, want: []int{200, 429}, wantCalls: 2},
		{name: "force when enabled", opts: httplimit.Options{Force: true}, want: []int{200, 429}, wantCalls: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := newStore(t)
			tt.opts.Logger = quietLogger()
			h := httplimit.ByIP(store, "ip", ratelimit.PerMinute(1), tt.opts)(okHandler)
			var got []int
			for range tt.want {
				r := serve(h, "192.0.2.1:1")
				got = append(got, r.status)
				if tt.wantCalls == 0 && r.header.Get("RateLimit") != "" {
					t.Errorf("pass-through wrote RateLimit %q", r.header.Get("RateLimit"))
				}
			}
			if len(got) != 2 || got[0] != tt.want[0] || got[1] != tt.want[1] || store.Calls() != tt.wantCalls {
				t.Errorf("statuses %v with %d store calls, want %v with %d", got, store.Calls(), tt.want, tt.wantCalls)
			}
		})
	}
}

func TestCustomResponder(t *testing.T) {
	t.Parallel()
	var seen httplimit.Rejection
	opts := httplimit.Options{Logger: quietLogger(), Responder: func(w http.ResponseWriter, r *http.Request, rj httplimit.Rejection) {
		seen = rj
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(rj.Status)
		_, _ = io.WriteString(w, "slow down: "+rj.Detail())
	}}
	h := httplimit.ByIP(newStore(t), "upload", ratelimit.PerSecond(1), opts)(okHandler)
	serve(h, "192.0.2.1:1")
	got := serve(h, "192.0.2.1:1")
	wantBody := "slow down: Too many requests: 1 every 1 seconds"
	if got.status != 429 || string(got.body) != wantBody || got.header.Get("Retry-After") != "1" || got.header.Get("Content-Type") != "text/plain" {
		t.Errorf("got %d %q Retry-After %q Content-Type %q, want 429 %q Retry-After 1 text/plain",
			got.status, got.body, got.header.Get("Retry-After"), got.header.Get("Content-Type"), wantBody)
	}
	if seen.Policy != "upload" || seen.Fault != nil || seen.Decision.Allowed {
		t.Errorf("responder saw %+v, want a denied decision for policy upload", seen)
	}
}

func TestStoreFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		mode       ratelimit.FailureMode
		wantStatus int
		wantFields map[string]string
		wantBody   string
	}{
		{name: "fail-open passes", mode: ratelimit.FailOpen, wantStatus: 200, wantFields: map[string]string{"Content-Type": "text/plain"}, wantBody: "ok"},
		{name: "fail-closed answers 503", mode: ratelimit.FailClosed, wantStatus: 503,
			wantFields: map[string]string{"Retry-After": "1", "Content-Type": "application/problem+json"},
			wantBody:   `{"title":"Service Unavailable","status":503,"detail":"Rate limit unavailable, retry later"}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := httplimit.Options{Logger: quietLogger()}
			def := httplimit.IPDefinition("login", ratelimit.PerMinute(5), opts)
			def.FailureMode = tt.mode
			l, err := ratelimit.Define[*http.Request](downStore{}, def, ratelimit.WithLogger(quietLogger()))
			if err != nil {
				t.Fatal(err)
			}
			got := serve(httplimit.Middleware(l, opts)(okHandler), "192.0.2.1:1")
			if f := fields(got.header, allFields...); got.status != tt.wantStatus || string(got.body) != tt.wantBody || !equalFields(f, tt.wantFields) {
				t.Errorf("got %d %v %q, want %d %v %q", got.status, f, got.body, tt.wantStatus, tt.wantFields, tt.wantBody)
			}
		})
	}
}

func TestByIPFailsOpen(t *testing.T) {
	t.Parallel()
	h := httplimit.ByIP(downStore{}, "login", ratelimit.PerSecond(1), httplimit.Options{Logger: quietLogger()})(okHandler)
	if got := serve(h, "192.0.2.1:1"); got.status != 200 {
		t.Errorf("status %d with the store down, want 200 (ByIP fails open)", got.status)
	}
}

func TestInvalidLimitAnswers500AndLogs(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	l, err := ratelimit.Define(newStore(t), ratelimit.Definition[*http.Request]{
		Scene:       "api",
		Subject:     func(r *http.Request) []string { return []string{"key", r.Header.Get("X-Api-Key")} },
		Limits:      func(*http.Request) []ratelimit.Limit { return []ratelimit.Limit{ratelimit.PerSecond(0)} },
		FailureMode: ratelimit.FailOpen, // must not mask a programmer error
	}, ratelimit.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("X-Api-Key", "k1")
	w := httptest.NewRecorder()
	httplimit.Middleware(l, httplimit.Options{Logger: logger})(okHandler).ServeHTTP(w, r)
	wantBody := `{"title":"Internal Server Error","status":500}` + "\n"
	if w.Code != 500 || w.Body.String() != wantBody {
		t.Errorf("got %d %q, want 500 %q", w.Code, w.Body.String(), wantBody)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "Limit.Quota must be a positive integer") {
		t.Errorf("log %q, want an error naming Limit.Quota", logs.String())
	}
}

func TestShadowModeChangesNothingForClients(t *testing.T) {
	t.Parallel()
	store := newStore(t)
	opts := httplimit.Options{Logger: quietLogger()}
	def := httplimit.IPDefinition("search", ratelimit.PerMinute(1), opts)
	def.Shadow = true
	l, err := ratelimit.Define(store, def, ratelimit.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	h := httplimit.Middleware(l, opts)(okHandler)
	for i := range 3 {
		got := serve(h, "192.0.2.1:1")
		if f := fields(got.header, allFields...); got.status != 200 || len(f) != 1 {
			t.Errorf("request %d: %d %v, want 200 without rate-limit fields", i, got.status, f)
		}
	}
	if store.Calls() != 3 {
		t.Errorf("store calls = %d, want 3 (shadow still counts)", store.Calls())
	}
}

func TestPoliciesAndClientsHaveSeparateCounters(t *testing.T) {
	t.Parallel()
	store := newStore(t)
	opts := httplimit.Options{Logger: quietLogger(), IPv6Prefix: 64}
	a := httplimit.ByIP(store, "a", ratelimit.PerMinute(1), opts)(okHandler)
	b := httplimit.ByIP(store, "b", ratelimit.PerMinute(1), opts)(okHandler)
	tests := []struct {
		h      http.Handler
		remote string
		want   int
	}{
		{a, "[2001:db8:1:2::1]:1", 200},
		{b, "[2001:db8:1:2::1]:1", 200},    // other policy
		{a, "[2001:db8:1:2::ffff]:1", 429}, // same /64
		{a, "[2001:db8:1:3::1]:1", 200},    // other /64
		{a, "192.0.2.1:1", 200},
	}
	for i, tt := range tests {
		if got := serve(tt.h, tt.remote); got.status != tt.want {
			t.Errorf("request %d from %s: status %d, want %d", i, tt.remote, got.status, tt.want)
		}
	}
}

func TestIPDefinitionKey(t *testing.T) {
	t.Parallel()
	l, err := ratelimit.Define(newStore(t), httplimit.IPDefinition("wechat-login-qrcode", ratelimit.PerMinute(1), httplimit.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "192.0.2.1:1234"
	got, err := l.Key(r)
	want := "rate-limit:ip:wechat-login-qrcode:{ip:192.0.2.1}"
	if err != nil || got != want {
		t.Errorf("Key = %q, %v, want %q", got, err, want)
	}
}

func TestConstructorsPanicOnBadConfiguration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		fn   func()
		want string
	}{
		{"empty id", func() { httplimit.ByIP(newStore(t), "", ratelimit.PerSecond(1), httplimit.Options{}) }, "id must not be empty"},
		{"zero quota", func() { httplimit.ByIP(newStore(t), "x", ratelimit.PerSecond(0), httplimit.Options{}) }, "Limit.Quota"},
		{"nil store", func() { httplimit.ByIP(nil, "x", ratelimit.PerSecond(1), httplimit.Options{}) }, "store must not be nil"},
		{"bad IPv6 prefix", func() { httplimit.ByIP(newStore(t), "x", ratelimit.PerSecond(1), httplimit.Options{IPv6Prefix: 129}) }, "IPv6Prefix"},
		{"nil limiter", func() { httplimit.Middleware(nil, httplimit.Options{}) }, "limiter must not be nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				got, _ := recover().(string)
				if !strings.Contains(got, tt.want) || !strings.HasPrefix(got, "httplimit: ") {
					t.Errorf("panic %q, want one starting with httplimit: and naming %q", got, tt.want)
				}
			}()
			tt.fn()
		})
	}
}

func BenchmarkByIP(b *testing.B) {
	store := newStore(b)
	h := httplimit.ByIP(store, "api", ratelimit.PerSecond(1<<40), httplimit.Options{})(okHandler)
	r := httptest.NewRequest(http.MethodGet, "/", nil).WithContext(context.Background())
	r.RemoteAddr = "192.0.2.1:1234"
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		clear(w.Header())
		h.ServeHTTP(w, r)
	}
}

// BenchmarkLimiterCheck is BenchmarkByIP without the web layer: the
// same limiter and request, called directly, so the difference is what
// httplimit adds (client IP, headers, handler call).
func BenchmarkLimiterCheck(b *testing.B) {
	l, err := ratelimit.Define(newStore(b), httplimit.IPDefinition("api", ratelimit.PerSecond(1<<40), httplimit.Options{}))
	if err != nil {
		b.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "192.0.2.1:1234"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Check(r.Context(), r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkByIPParallel spreads requests over 1024 client addresses.
func BenchmarkByIPParallel(b *testing.B) {
	h := httplimit.ByIP(newStore(b), "api", ratelimit.PerSecond(1<<40), httplimit.Options{})(okHandler)
	reqs := make([]*http.Request, 1024)
	for i := range reqs {
		reqs[i] = httptest.NewRequest(http.MethodGet, "/", nil)
		reqs[i].RemoteAddr = netip.AddrFrom4([4]byte{192, 0, byte(i >> 8), byte(i)}).String() + ":1234"
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w := httptest.NewRecorder()
		for pb.Next() {
			clear(w.Header())
			h.ServeHTTP(w, reqs[next.Add(1)&1023])
		}
	})
}

// TestConcurrentClientsAdmitExactlyTheQuota sends 64 concurrent requests
// from one client over real connections through a limit of 32.
func TestConcurrentClientsAdmitExactlyTheQuota(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(httplimit.ByIP(newStore(t), "burst", ratelimit.PerMinute(32), httplimit.Options{Logger: quietLogger()})(okHandler))
	defer srv.Close()
	var wg sync.WaitGroup
	statuses := make(chan int, 64)
	for range 64 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses <- resp.StatusCode
		})
	}
	wg.Wait()
	close(statuses)
	got := map[int]int{}
	for s := range statuses {
		got[s]++
	}
	if got[200] != 32 || got[429] != 32 {
		t.Errorf("statuses %v, want 32×200 and 32×429", got)
	}
}
