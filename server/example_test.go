package server_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/sluicehq/sluice/ratelimit/memlimit"
	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/server/config"
)

// A server on in-process counters, asked twice for a policy of one call a
// minute: the second call is refused with 429 and the IETF fields.
func Example() {
	cfg, err := config.Parse([]byte(`
limits:
  scenes:
    member:
      subject: [member]
      policies:
        export-usage: {limits: [{quota: 1, window: 60s}]}
`), "sluice.yaml")
	if err != nil {
		panic(err)
	}
	store := memlimit.New(memlimit.Options{})
	defer store.Close()
	srv, err := server.New(server.Options{Config: cfg, Limits: store, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	for range 2 {
		req := httptest.NewRequest("POST", "/v1/limits/member/export-usage", strings.NewReader(`{"subject":{"member":"42"}}`))
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		fmt.Println(rec.Code, http.StatusText(rec.Code), rec.Header().Get("RateLimit-Policy"))
	}
	// Output:
	// 200 OK "member/export-usage";q=1;w=60
	// 429 Too Many Requests "member/export-usage";q=1;w=60
}
