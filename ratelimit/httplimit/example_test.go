package httplimit_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/httplimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

// A login endpoint admits each client twice a minute, as a token bucket
// (smooth: a new attempt every 30 seconds, at most 2 at once). The service
// runs behind a proxy on 10.0.0.0/8, so the client comes from
// X-Forwarded-For.
func ExampleByIP() {
	store := memlimit.New(memlimit.Options{})
	defer store.Close()
	proxies, err := httplimit.ParseCIDRs([]string{"10.0.0.0/8"})
	if err != nil {
		panic(err)
	}
	login := httplimit.ByIP(store, "login", ratelimit.PerMinute(2).With(ratelimit.TokenBucket),
		httplimit.Options{TrustedProxies: proxies})
	h := login(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "welcome")
	}))

	for range 3 {
		r := httptest.NewRequest(http.MethodPost, "/login", nil)
		r.RemoteAddr = "10.0.0.7:41000"
		r.Header.Set("X-Forwarded-For", "203.0.113.50")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		// RateLimit's t= depends on the wall clock: print the rest.
		remaining, _, _ := strings.Cut(w.Header().Get("RateLimit"), ";t=")
		fmt.Println(w.Code, w.Header().Get("RateLimit-Policy"), remaining, strings.TrimSpace(w.Body.String()))
	}
	// Output:
	// 200 "login";q=2;w=60 "login";r=1 welcome
	// 200 "login";q=2;w=60 "login";r=0 welcome
	// 429 "login";q=2;w=60 "login";r=0 {"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"Too many requests: 2 every 60 seconds"}
}

// Middleware takes any limiter on *http.Request; here each API key gets
// 100 requests a minute and 1000 an hour, in one all-or-nothing decision,
// and the limit fails closed: with the store down, clients get 503.
func ExampleMiddleware() {
	store := memlimit.New(memlimit.Options{})
	defer store.Close()
	perKey, err := ratelimit.Define(store, ratelimit.Definition[*http.Request]{
		Scene:   "api",
		Subject: func(r *http.Request) []string { return []string{"api-key", r.Header.Get("X-Api-Key")} },
		Limits: func(*http.Request) []ratelimit.Limit {
			return []ratelimit.Limit{ratelimit.PerMinute(100), ratelimit.PerHour(1000)}
		},
		FailureMode: ratelimit.FailClosed,
	})
	if err != nil {
		panic(err)
	}
	h := httplimit.Middleware(perKey, httplimit.Options{LegacyHeaders: true})(http.NotFoundHandler())

	r := httptest.NewRequest(http.MethodGet, "/items", nil)
	r.Header.Set("X-Api-Key", "k-123")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	fmt.Println(w.Code, w.Header().Get("RateLimit-Policy"), w.Header().Get("X-RateLimit-Remaining"))
	// Output:
	// 404 "default";q=100;w=60 99
}
